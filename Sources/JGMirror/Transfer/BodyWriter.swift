/// Writes one item's body buffers where they belong (docs/engine.md#connections-and-ranges,
/// docs/safety.md#size-limits), as libcurl's write callback hands them over: each buffer is
/// accounted against the writing connection's region in the item's `SegmentBook`, checked against
/// what the server announced and what the manifest allows, written at its offset (in the part file,
/// or in the body held in memory), and reported to the observer and to
/// `ItemDurability`. A body held in memory is hashed whole when it is handed over,
/// so the observer does not see it.
///
/// The hot path: per buffer it allocates nothing and copies no book (the item's
/// book is mutated in place through `inout`). Held in its `ItemStorage`'s
/// `EngineBound` field: touched on the engine thread only, checked.
struct BodyWriter {
    /// The length the manifest promises (`size`).
    private let expectedSize: Int64?
    /// The most bytes a body may bring (`max_size`).
    private let sizeLimit: Int64?
    private let observer: PartFileObserver?
    /// Keeps a body of unknown length from filling the disk (`--min-free`).
    private var spaceGuard: SpaceGuard
    /// Bytes written in this run.
    private(set) var bytesThisRun: Int64 = 0
    /// How far the contiguous prefix was last reported to the observer.
    private var reportedPrefix: Int64 = 0

    init(request: TransferRequest, spaceGuard: SpaceGuard) {
        expectedSize = request.expectedSize
        sizeLimit = request.options.maxSize
        observer = request.observer
        self.spaceGuard = spaceGuard
    }

    /// The part file starts over from zero: the prefix is reported again from there.
    mutating func restarted() { reportedPrefix = 0 }

    /// The body ended: the free space its guard held is the other bodies' again.
    mutating func ended() { spaceGuard.release() }

    /// Writes what `worker`'s current request may deliver of `bytes` at its position
    /// and moves the position on. Returns the count written, which ends the request
    /// when short of `bytes.count` (its region is done, or it must stop), and a
    /// failure that fails the item: more than announced, more than `size` or
    /// `max_size`, no room on the disk, or a write or earlier flush that failed. A
    /// failure may come with bytes written (a flush's, found after the write).
    mutating func write(
        _ bytes: UnsafeRawBufferPointer, for worker: Worker, book: inout SegmentBook?, part: PartFile?, held: HeldBody?,
        durability: ItemDurability
    ) -> (written: Int, failure: TransferError?) {
        let (count, refusal) = admit(Int64(bytes.count), for: worker, book: &book, part: part)
        guard refusal == nil, count > 0 else { return (0, refusal) }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[0..<Int(count)])
        if let held {
            guard held.write(slice, at: worker.pos) else {
                return (0, .sizeMismatch("server sent more bytes than announced (\(Redactor.redactURL(worker.url)))"))
            }
        } else {
            do {
                try part?.write(slice, at: worker.pos)
            } catch {
                return (0, error)
            }
            if let observer, let length = book?.length, length <= partFileInlineLimit {
                observer.written(slice, at: worker.pos)
            }
        }
        worker.pos += count
        bytesThisRun += count
        var failure: TransferError?
        if let part { failure = durability.wrote(Int(count), to: part) }
        let prefix = book?.contiguousPrefix ?? 0
        if prefix - reportedPrefix >= 4 << 20 {
            reportedPrefix = prefix
            observer?.prefixCompleted(upTo: prefix)
        }
        return (Int(count), failure)
    }

    /// How many of the `count` bytes arriving for `worker` its request may write: with
    /// regions, what is left of its region (recorded in `book`, in place); without,
    /// all of them, within `size`, `max_size` and the free space. A refusal writes none
    /// and fails the item.
    @inline(__always)
    private mutating func admit(_ count: Int64, for worker: Worker, book: inout SegmentBook?, part: PartFile?) -> (
        count: Int64, refusal: TransferError?
    ) {
        if let region = book?.region(of: worker.slot) {
            // Past what its response announced (a 206's `Content-Range`, else what the
            // request can deliver), within this connection's region, the server breaks
            // its own word. Announced bytes past the region's end, as a 206 that runs to
            // the file's end sends, are cut by `record` below, as an open-ended
            // request's are.
            if let announced = worker.announcedEnd ?? worker.requestedEnd, worker.pos + count > announced, region.end >= announced
            {
                let url = Redactor.redactURL(worker.url)
                return (0, .sizeMismatch("server sent more bytes than announced (over \(announced) for \(url))"))
            }
            // Mutated in place (no copy of the book per buffer).
            let accepted = book?.record(worker.slot, at: worker.pos, count: count) ?? 0
            if accepted < count { worker.truncated = true }
            return (accepted, nil)
        }
        if book != nil { return (0, nil) }  // no region: nothing of this body is wanted
        if let expectedSize, worker.pos + count > expectedSize {
            return (0, .sizeMismatch("server sent more than the expected \(expectedSize) bytes"))
        }
        if let sizeLimit, worker.pos + count > sizeLimit {
            return (0, .tooLarge("the body of unknown length grew past max_size (\(sizeLimit) bytes); stopped"))
        }
        if let part, let failure = spaceGuard.admit(Int(count), fd: part.fd, path: part.path) { return (0, failure) }
        return (count, nil)
    }
}
