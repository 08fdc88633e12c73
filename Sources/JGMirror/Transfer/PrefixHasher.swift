import Dispatch
import Foundation
import Synchronization

/// Hashes a part file's contiguous prefix while the download continues, so that
/// verifying a finished file costs only its last stretch.
///
/// Bytes that continue the prefix are hashed as they are written, on the writer's
/// thread. Others are read back (from the page cache) on a hashing queue, which
/// works the same for a single stream, for many ranges arriving out of order, and
/// for bytes a resumed download already had on disk. The first `heldLimit` bytes
/// are only kept, and hashed by `finish`: a small file is then hashed wholly by
/// whoever finishes it, off the writer's thread, whose time per file bounds how fast
/// many small files go.
public final class PrefixHasher: PartFileObserver, Sendable {
    private struct State {
        var fd: Int32 = -1
        /// Made on first use (a small body held in memory never needs one); nil once
        /// made only when libcrypto could not provide one.
        private var madeHasher: SHA256?
        private var hasherMade = false
        var hashed: Int64 = 0
        /// The prefix's next bytes after `hashed`, written but not hashed yet.
        var held: [UInt8] = []
        var failure: VerifyError?
        /// A read-back is feeding `hasher` outside the lock; written bytes wait for it.
        var reading = false
        /// Bumped by a restart, so read-backs from before it change nothing.
        var generation = 0
        /// This file's read-backs, one at a time; made when the first is needed.
        var queue: DispatchQueue?

        /// The end of the prefix seen so far: hashed, then held.
        var covered: Int64 { hashed + Int64(held.count) }

        mutating func hasher() -> SHA256? {
            if !hasherMade {
                madeHasher = SHA256()
                hasherMade = true
            }
            return madeHasher
        }

        /// A new hasher on first use (a restart).
        mutating func dropHasher() {
            madeHasher = nil
            hasherMade = false
        }

        mutating func hashHeld() {
            guard !held.isEmpty, let hasher = hasher() else { return }
            held.withUnsafeBytes { hasher.update($0) }
            hashed += Int64(held.count)
            held = []
        }
    }

    /// A file up to this size is hashed when it is finished, not as it is written.
    static let heldLimit = 64 << 10

    private let path: String
    /// Opens `path` without following symlinks, when the part file is below a root.
    private let root: RootDirectory?
    private let state: Mutex<State>

    /// A hasher for the part file at `path`, which may not exist yet.
    public convenience init(path: String) { self.init(path: path, root: nil) }

    /// A hasher for the part file at `path` below `root`.
    init(path: String, root: RootDirectory?) {
        self.path = path
        self.root = root
        state = Mutex(State())
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    /// Hashing queues share the cores with everything else.
    private static let pool = DispatchQueue(label: "jgmirror.hashing", attributes: .concurrent)

    public func prefixCompleted(upTo offset: Int64) {
        guard let (generation, queue) = state.withLock({ $0.covered < offset ? ($0.generation, readBacks(&$0)) : nil }) else {
            return
        }
        queue.async { self.advance(to: offset, generation: generation) }
    }

    /// Keeps or hashes bytes that continue the prefix at once; others (or any while a
    /// read-back is running) are read back later, as they are on disk already.
    public func written(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        state.withLock { state in
            guard !state.reading, state.failure == nil, offset == state.covered else { return }
            if state.hashed == 0, state.held.count + bytes.count <= Self.heldLimit {
                state.held.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
                return
            }
            state.hashHeld()
            guard let hasher = state.hasher() else { return }
            hasher.update(bytes)
            state.hashed += Int64(bytes.count)
        }
    }

    /// The file's read-back queue, made on first use (a small file never needs one).
    private func readBacks(_ state: inout State) -> DispatchQueue {
        if let queue = state.queue { return queue }
        let queue = DispatchQueue(label: "jgmirror.prefix-hasher", target: PrefixHasher.pool)
        state.queue = queue
        return queue
    }

    /// Starts over with a new hasher: a read-back still feeding the old one finishes
    /// harmlessly.
    public func restarted() {
        state.withLock {
            $0.dropHasher()
            $0.hashed = 0
            $0.held = []
            $0.failure = nil
            $0.reading = false
            $0.generation += 1
        }
    }

    /// The digest of the first `length` bytes, once hashed.
    public func finish(length: Int64) async -> Result<String, VerifyError> {
        await withCheckedContinuation { continuation in
            finish(length: length) { continuation.resume(returning: $0) }
        }
    }

    /// Calls `completion` with the digest of the first `length` bytes: at once when
    /// they are all written (hashing what is held on the caller's thread), otherwise
    /// on the hashing queue after reading the rest.
    func finish(length: Int64, completion: @escaping @Sendable (Result<String, VerifyError>) -> Void) {
        let readBack = state.withLock { $0.covered == length && !$0.reading ? nil : ($0.generation, readBacks(&$0)) }
        guard let (generation, queue) = readBack else {
            completion(state.withLock { digest(&$0, length: length) })
            return
        }
        queue.async {
            self.advance(to: length, generation: generation)
            completion(self.state.withLock { self.digest(&$0, length: length) })
        }
    }

    private func digest(_ state: inout State, length: Int64) -> Result<String, VerifyError> {
        state.hashHeld()
        if let failure = state.failure { return .failure(failure) }
        guard let hasher = state.hasher() else { return .failure(.noHasher) }
        guard state.hashed == length else {
            return .failure(.unreadable(path: path, reason: "file is shorter than \(length) bytes"))
        }
        return .success(hasher.finalizeHex())
    }

    /// Reads `[hashed, offset)` back into the hasher (hashing queue, one at a time),
    /// without holding the lock the writer's thread takes.
    private func advance(to offset: Int64, generation: Int) {
        let work = state.withLock { state -> (fd: Int32, from: Int64, hasher: SHA256)? in
            guard state.generation == generation, state.failure == nil, let hasher = state.hasher(),
                offset > state.covered
            else { return nil }
            state.hashHeld()
            if state.fd < 0 {
                if let root {
                    let opened = Result { () throws(TransferError) -> Int32 in try root.openFile(path, flags: O_RDONLY) }
                    switch opened {
                    case .success(let fd): state.fd = fd
                    case .failure(let error):
                        state.failure = .unreadable(path: path, reason: error.message)
                        return nil
                    }
                } else {
                    state.fd = open(path, O_RDONLY | O_CLOEXEC)
                    guard state.fd >= 0 else {
                        state.failure = .unreadable(path: path, reason: String(cString: strerror(errno)))
                        return nil
                    }
                }
            }
            state.reading = true
            return (state.fd, state.hashed, hasher)
        }
        guard let work else { return }
        let reached = Result { () throws(VerifyError) -> Int64 in
            try FileHasher.hashRange(fd: work.fd, from: work.from, to: offset, into: work.hasher, path: path)
        }
        state.withLock { state in
            guard state.generation == generation else { return }
            state.reading = false
            switch reached {
            case .success(let offset): state.hashed = offset
            case .failure(let error): state.failure = error
            }
        }
    }
}
