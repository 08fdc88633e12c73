import Dispatch
import Foundation
import Synchronization

/// Hashes a part file's contiguous prefix while the download continues, so that
/// verifying a finished file costs only its last stretch.
///
/// Large files are read back (from the page cache) on a hashing queue, which works
/// the same for a single stream, for many ranges arriving out of order, and for
/// bytes a resumed download already had on disk. A small file's bytes are hashed
/// as they are written, on the writer's thread: 16 KiB hash in microseconds, less
/// than handing them to another thread would cost.
public final class PrefixHasher: PartFileObserver, Sendable {
    private struct State {
        var fd: Int32 = -1
        var hasher: SHA256?
        var hashed: Int64 = 0
        var failure: VerifyError?
        /// A read-back is feeding `hasher` outside the lock; written bytes wait for it.
        var reading = false
        /// Bumped by a restart, so read-backs from before it change nothing.
        var generation = 0
    }

    private let queue: DispatchQueue
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
        queue = DispatchQueue(label: "jgmirror.prefix-hasher", target: PrefixHasher.pool)
        state = Mutex(State(hasher: SHA256()))
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    /// Hashing queues share the cores with everything else.
    private static let pool = DispatchQueue(label: "jgmirror.hashing", attributes: .concurrent)

    public func prefixCompleted(upTo offset: Int64) {
        guard let generation = state.withLock({ $0.hashed < offset ? $0.generation : nil }) else { return }
        queue.async { self.advance(to: offset, generation: generation) }
    }

    /// Hashes bytes that continue the prefix at once; others (or any while a
    /// read-back is running) are read back later, as they are on disk already.
    public func written(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        state.withLock { state in
            guard !state.reading, state.failure == nil, let hasher = state.hasher, offset == state.hashed else { return }
            hasher.update(bytes)
            state.hashed += Int64(bytes.count)
        }
    }

    /// Starts over with a new hasher: a read-back still feeding the old one finishes
    /// harmlessly.
    public func restarted() {
        state.withLock {
            $0.hasher = SHA256()
            $0.hashed = 0
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
    /// they are all hashed, otherwise on the hashing queue after reading the rest.
    func finish(length: Int64, completion: @escaping @Sendable (Result<String, VerifyError>) -> Void) {
        let generation = state.withLock { $0.hashed == length && !$0.reading ? nil : $0.generation }
        guard let generation else {
            completion(state.withLock { digest($0, length: length) })
            return
        }
        queue.async {
            self.advance(to: length, generation: generation)
            completion(self.state.withLock { self.digest($0, length: length) })
        }
    }

    private func digest(_ state: State, length: Int64) -> Result<String, VerifyError> {
        if let failure = state.failure { return .failure(failure) }
        guard let hasher = state.hasher else { return .failure(.noHasher) }
        guard state.hashed == length else {
            return .failure(.unreadable(path: path, reason: "file is shorter than \(length) bytes"))
        }
        return .success(hasher.finalizeHex())
    }

    /// Reads `[hashed, offset)` back into the hasher (hashing queue, one at a time),
    /// without holding the lock the writer's thread takes.
    private func advance(to offset: Int64, generation: Int) {
        let work = state.withLock { state -> (fd: Int32, from: Int64, hasher: SHA256)? in
            guard state.generation == generation, state.failure == nil, let hasher = state.hasher,
                offset > state.hashed
            else { return nil }
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
