import Foundation

/// Hashes files on disk with large sequential reads.
public enum FileHasher {
    /// Read size: large enough that syscalls vanish next to hashing.
    static let chunk = 1 << 20

    /// SHA-256 (lower-case hex) of the file at `path`.
    public static func sha256(path: String) throws(VerifyError) -> String {
        try hex(path: path, algorithm: .sha256)
    }

    /// SHA-512 (lower-case hex) of the file at `path`.
    public static func sha512(path: String) throws(VerifyError) -> String {
        try hex(path: path, algorithm: .sha512)
    }

    static func hex(path: String, algorithm: SHA256.Algorithm) throws(VerifyError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        return try hex(fd: fd, path: path, algorithm: algorithm)
    }

    /// SHA-256 (lower-case hex) of the open file `fd`, read from its start; `path`
    /// names it in errors.
    static func sha256(fd: Int32, path: String) throws(VerifyError) -> String {
        try hex(fd: fd, path: path, algorithm: .sha256)
    }

    /// The digest of the open file `fd` from its start.
    static func hex(fd: Int32, path: String, algorithm: SHA256.Algorithm) throws(VerifyError) -> String {
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        guard let hasher = SHA256(algorithm) else { throw .noHasher }
        try hashRange(fd: fd, from: 0, to: nil, into: hasher, path: path)
        return hasher.finalizeHex()
    }

    /// Feeds bytes `[from, to)` of `fd` (to end of file when `to` is nil) into `hasher`;
    /// returns the offset reached. A range of more than a chunk reads each chunk while
    /// the one before it is hashed, on a second thread when a core is free (inside
    /// another `concurrentPerform` that holds every core, one after the other): a
    /// read from the page cache costs about a quarter of hashing what it brings.
    @discardableResult
    static func hashRange(fd: Int32, from: Int64, to end: Int64?, into hasher: SHA256, path: String) throws(VerifyError) -> Int64
    {
        let size = end.map { Int(max(0, min(Int64(chunk), $0 - from))) } ?? chunk
        let buffers = (0..<2).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 4096) }
        defer {
            for buffer in buffers { buffer.deallocate() }
        }
        var offset = from
        var current = 0
        var count = try read(fd, into: buffers[current], at: offset, before: end, path: path).get()
        while count > 0 {
            let pair = BufferPair(
                filled: UnsafeRawBufferPointer(rebasing: buffers[current][0..<count]), spare: buffers[1 - current])
            offset += Int64(count)
            if let end, offset >= end {
                hasher.update(pair.filled)  // the last chunk: nothing left to read beside it
                break
            }
            let next = Locked<Result<Int, VerifyError>>(.success(0))
            let nextOffset = offset
            DispatchQueue.concurrentPerform(iterations: 2) { task in
                if task == 0 {
                    hasher.update(pair.filled)
                } else {
                    let result = read(fd, into: pair.spare, at: nextOffset, before: end, path: path)
                    next.withLock { $0 = result }
                }
            }
            count = try next.value.get()
            current = 1 - current
        }
        return offset
    }

    /// Reads up to a buffer's worth of `fd` at `offset` (not past `end`) into `buffer`.
    private static func read(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, before end: Int64?, path: String
    ) -> Result<Int, VerifyError> {
        let want = end.map { Int(max(0, min(Int64(buffer.count), $0 - offset))) } ?? buffer.count
        guard want > 0 else { return .success(0) }
        while true {
            let count = pread(fd, buffer.baseAddress, want, off_t(offset))
            if count >= 0 { return .success(count) }
            if errno != EINTR { return .failure(.unreadable(path: path, reason: String(cString: strerror(errno)))) }
        }
    }

    /// Hashes many files on all cores; `results[i]` belongs to `paths[i]`.
    public static func sha256(paths: [String], concurrency: Int = ProcessInfo.processInfo.activeProcessorCount)
        -> [Result<String, VerifyError>]
    {
        concurrentMap(count: paths.count, threads: concurrency) { index in
            Result { () throws(VerifyError) -> String in try sha256(path: paths[index]) }
        }
    }
}

/// The two buffers of `FileHasher.hashRange` in one step: one task of a
/// `concurrentPerform` hashes `filled` while the other reads into `spare`.
///
/// `@unchecked Sendable`: each buffer is touched by one of the two tasks only, and
/// `concurrentPerform` returns once both are done, before either is used again.
private struct BufferPair: @unchecked Sendable {
    let filled: UnsafeRawBufferPointer
    let spare: UnsafeMutableRawBufferPointer
}
