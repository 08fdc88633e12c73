import Dispatch
import Foundation
import Synchronization

/// Hashes a part file's contiguous prefix while the download continues, so that
/// verifying a finished file costs only its last stretch.
///
/// Bytes that continue the prefix are hashed as they are written, on the writer's
/// thread. Others are read back (from the page cache) by computing jobs of the run's
/// `WorkPool`, one at a time per file, so the pool's one limit governs every hash of
/// the run (docs/engine.md#verification); this works the same for a single stream,
/// for many ranges arriving out of order, and for bytes a resumed download already
/// had on disk. The first `heldLimit` bytes are only kept, and hashed by `finish`: a
/// small file is then hashed wholly by whoever finishes it, off the writer's thread,
/// whose time per file bounds how fast many small files go.
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
        /// A read-back job is feeding `hasher` outside the lock; written bytes wait for it.
        var reading = false
        /// How far the read-backs asked for so far must go.
        var target: Int64 = 0
        /// `finish` calls waiting for the read-backs, with the length each asked for.
        var waiting: [(length: Int64, completion: @Sendable (Result<String, VerifyError>) -> Void)] = []
        /// Bumped by a restart, so read-backs from before it change nothing.
        var generation = 0

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
    /// Where the read-backs run, as computing jobs.
    private let pool: WorkPool
    private let state: Mutex<State>

    /// A hasher for the part file at `path`, which may not exist yet, reading back on a
    /// thread of its own.
    public convenience init(path: String) { self.init(path: path, root: nil, pool: WorkPool(computingThreads: 1)) }

    /// A hasher for the part file at `path` below `root`, reading back on `pool`.
    init(path: String, root: RootDirectory?, pool: WorkPool) {
        self.path = path
        self.root = root
        self.pool = pool
        state = Mutex(State())
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    public func prefixCompleted(upTo offset: Int64) {
        readBack(to: offset)
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

    /// Asks for the prefix to be hashed up to `offset`, with `completion` told the digest
    /// of exactly that many bytes once it is: starts the file's read-back job unless it
    /// is running, which then goes on to `offset`.
    private func readBack(
        to offset: Int64, completion: (@Sendable (Result<String, VerifyError>) -> Void)? = nil
    ) {
        let start = state.withLock { state -> Int? in
            if let completion { state.waiting.append((offset, completion)) }
            state.target = max(state.target, offset)
            guard !state.reading, state.covered < state.target || !state.waiting.isEmpty else { return nil }
            state.reading = true
            return state.generation
        }
        guard let generation = start else { return }
        pool.submit(.computing) { self.advance(generation: generation) }
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
            $0.target = 0
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
    /// from the read-back job once it has read the rest.
    func finish(length: Int64, completion: @escaping @Sendable (Result<String, VerifyError>) -> Void) {
        let now = state.withLock { state -> Result<String, VerifyError>? in
            state.covered == length && !state.reading ? Self.digest(&state, length: length, path: path) : nil
        }
        if let now { return completion(now) }
        readBack(to: length, completion: completion)
    }

    private static func digest(_ state: inout State, length: Int64, path: String) -> Result<String, VerifyError> {
        state.hashHeld()
        if let failure = state.failure { return .failure(failure) }
        guard let hasher = state.hasher() else { return .failure(.noHasher) }
        guard state.hashed == length else {
            return .failure(.unreadable(path: path, reason: "file is shorter than \(length) bytes"))
        }
        return .success(hasher.finalizeHex())
    }

    /// The file's read-back job: reads `[hashed, target)` into the hasher without
    /// holding the lock the writer's thread takes, until nothing more is asked; then
    /// answers the `finish` calls waiting. More asked while it reads is read in the same
    /// job, never by a second one.
    private func advance(generation: Int) {
        typealias Answer = (@Sendable (Result<String, VerifyError>) -> Void, Result<String, VerifyError>)
        enum Step {
            case read(fd: Int32, from: Int64, to: Int64, hasher: SHA256)
            case answer([Answer])
        }
        while true {
            let step = state.withLock { state -> Step in
                guard state.generation == generation else { return .answer([]) }
                if state.failure == nil, state.target > state.covered, let hasher = state.hasher() {
                    state.hashHeld()
                    if openIfNeeded(&state) { return .read(fd: state.fd, from: state.hashed, to: state.target, hasher: hasher) }
                }
                state.reading = false
                let waiting = state.waiting
                state.waiting = []
                return .answer(waiting.map { ($0.completion, Self.digest(&state, length: $0.length, path: path)) })
            }
            switch step {
            case .answer(let answers):
                for (completion, digest) in answers { completion(digest) }
                return
            case .read(let fd, let from, let to, let hasher):
                let reached = Result { () throws(VerifyError) -> Int64 in
                    try FileHasher.hashRange(fd: fd, from: from, to: to, into: hasher, path: path)
                }
                state.withLock { state in
                    guard state.generation == generation else { return }
                    switch reached {
                    case .success(let offset) where offset < to:
                        // Bytes said to be final are not there: the file is shorter.
                        state.hashed = offset
                        state.failure = .unreadable(path: path, reason: "file is shorter than \(to) bytes")
                    case .success(let offset): state.hashed = offset
                    case .failure(let error): state.failure = error
                    }
                }
            }
        }
    }

    /// Opens the part file for the read-backs once; false, with `failure` set, when it
    /// cannot be.
    private func openIfNeeded(_ state: inout State) -> Bool {
        guard state.fd < 0 else { return true }
        if let root {
            let opened = Result { () throws(TransferError) -> Int32 in try root.openFile(path, flags: O_RDONLY) }
            switch opened {
            case .success(let fd): state.fd = fd
            case .failure(let error):
                state.failure = .unreadable(path: path, reason: error.message)
                return false
            }
        } else {
            state.fd = open(path, O_RDONLY | O_CLOEXEC)
            guard state.fd >= 0 else {
                state.failure = .unreadable(path: path, reason: String(cString: strerror(errno)))
                return false
            }
        }
        return true
    }
}
