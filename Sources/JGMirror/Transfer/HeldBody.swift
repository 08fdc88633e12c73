/// A small file's body, held in memory instead of written to its part file
/// (`TransferRequest.memoryLimit`): whoever places the file writes it once, after it
/// is verified.
///
/// A part file opened ahead cost each small file a trip to the preparation queue and
/// back, a create there, a write on the engine thread (whose time per file bounds
/// how fast small files go) and a rename on placement's, three threads taking the
/// folder's lock in turn; held here, the body is hashed and written once, verified,
/// by whoever places it (2000 × 16 KiB into tmpfs: bench/RESULTS.md, "Seventh round").
/// Reached only through its `ItemStorage`'s `EngineBound` field (the engine thread,
/// checked), until the outcome hands the bytes over.
final class HeldBody {
    /// The announced length: no byte is taken past it.
    let length: Int
    /// The body so far. Bytes arrive in order over one connection, and are appended;
    /// a gap (regions fetched over several connections) is zero until filled.
    private(set) var bytes: [UInt8] = []

    init(length: Int) {
        self.length = length
        bytes.reserveCapacity(length)
    }

    /// Copies `data` in at `offset`; false when it would run past the announced
    /// length (the book cuts every write at its region's end, so it does not).
    func write(_ data: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        guard offset >= 0, offset + Int64(data.count) <= Int64(length) else { return false }
        let start = Int(offset)
        if start > bytes.count { bytes.append(contentsOf: repeatElement(0, count: start - bytes.count)) }
        let overlap = min(data.count, bytes.count - start)
        if overlap > 0 {
            bytes.withUnsafeMutableBytes { target in
                UnsafeMutableRawBufferPointer(rebasing: target[start..<start + overlap])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: data[0..<overlap]))
            }
        }
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[overlap...]).assumingMemoryBound(to: UInt8.self))
        return true
    }
}
