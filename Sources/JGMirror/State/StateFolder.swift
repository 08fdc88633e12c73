import Foundation

/// `ROOT/.jgmirror/`, held for a sync: the locks that make one sync per tree and the
/// home of the state database (docs/state.md#the-state-folder). Never content: verify, plan and
/// prune skip it.
///
/// Which runs may share a tree:
///
/// - `ROOT/.jgmirror/lock` is the tree's lock: a whole-manifest run holds it
///   exclusively, a shard run (`--shard I/N`) shared, so shards of one manifest run
///   side by side and a whole run waits for none of them.
/// - A shard run also holds `shard-I-of-N.lock` exclusively (a second run of the same
///   shard is refused) and `shards-of-N.lock` shared, and refuses to start while any
///   `shards-of-M.lock` with another count is held (shards of different counts overlap).
/// - Nested roots, both ways. After taking its own locks a run probes the tree lock of
///   every folder above its root that has a `.jgmirror/` and of every `.jgmirror/`
///   below its root (a walk of the tree that reads folders only), each with a
///   non-blocking exclusive `flock` that is released at once: a lock held by anyone
///   is refused. Two runs that start together on nested roots each take their own
///   lock before probing the other's, so at least the later one sees the earlier
///   one's lock: at worst both are refused, never both admitted. A probe that meets
///   another run's probe (held for microseconds) is retried.
///
/// The locks are `flock`s on files that stay in place: the kernel drops them when a
/// process dies, so a crash never leaves a stale lock. On network file systems they
/// need the server's lock support (NFSv4 maps `flock` to byte-range locks).
public final class StateFolder {
    /// The folder's name under a root.
    public static let name = Paths.stateFolder

    /// `ROOT/.jgmirror`.
    public let path: String
    private var held: [Int32] = []

    /// Creates `ROOT/.jgmirror/` when missing and takes the locks for a run of `shard`
    /// (nil: the whole manifest), refusing with `.locked` when another run holds this
    /// tree, a folder above it or a folder below it.
    public init(root: String, shard: Shard?) throws(SyncError) {
        path = root + "/" + Self.name
        if mkdir(path, 0o755) != 0, errno != EEXIST {
            throw .local("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let folder = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { throw .local("cannot open \(path): \(String(cString: strerror(errno))) (it must be a folder)") }
        defer { close(folder) }
        do throws(SyncError) {
            try take("lock", in: folder, exclusive: shard == nil) { "another jgmirror sync holds \(root)" }
            if let shard {
                try take("shards-of-\(shard.count).lock", in: folder, exclusive: false) {
                    "another jgmirror sync holds \(root)"
                }
                for other in Self.shardCounts(in: path) where other != shard.count {
                    if Self.isHeld(path + "/shards-of-\(other).lock") {
                        throw .locked(
                            "a jgmirror sync of --shard ?/\(other) holds \(root); shards sharing a tree must use the same count (this run has \(shard.count))"
                        )
                    }
                }
                try take("shard-\(shard.index)-of-\(shard.count).lock", in: folder, exclusive: true) {
                    "another jgmirror sync of shard \(shard.index)/\(shard.count) holds \(root)"
                }
            }
            try Self.checkNested(root: root)
        } catch {
            release()
            throw error
        }
    }

    deinit { release() }

    private func release() {
        for fd in held { close(fd) }
        held = []
    }

    private func take(_ name: String, in folder: Int32, exclusive: Bool, refusal: () -> String) throws(SyncError) {
        let fd = openat(folder, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .local("cannot open \(path)/\(name): \(String(cString: strerror(errno)))") }
        held.append(fd)
        // Another run's probe holds any lock file exclusively for microseconds, and a
        // process the previous run of this one started may hold a copy of its lock until
        // it has begun its program (a fork's copies of descriptors go at exec, which a
        // loaded machine can delay): only a lock that stays held refuses the run.
        let deadline = DispatchTime.now().uptimeNanoseconds + Self.lockPatienceNs
        while flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK else { throw .local("cannot lock \(path)/\(name): \(String(cString: strerror(code)))") }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { throw .locked(refusal()) }
            usleep(10_000)
        }
    }

    /// Refuses when a run holds a tree above or below `root`.
    static func checkNested(root: String) throws(SyncError) {
        let real = Paths.canonical(root) ?? root
        var above = Paths.parent(of: real)
        while !above.isEmpty {
            let lock = (above == "/" ? "" : above) + "/" + name + "/lock"
            if isHeld(lock) { throw .locked("another jgmirror sync holds \(above), which contains \(root)") }
            if above == "/" { break }
            above = Paths.parent(of: above)
        }
        var below: String?
        TreeWalker.walk(root: real) { relative, kind in
            guard below == nil, case .folder = kind else { return .skip }
            guard Paths.lastComponent(of: relative) == name else { return .enter }
            if relative != name, isHeld(real + "/" + relative + "/lock") { below = Paths.parent(of: relative) }
            return .skip
        }
        if let below { throw .locked("another jgmirror sync holds \(root)/\(below), which is inside this tree") }
    }

    /// How long a lock must stay held to refuse a run: far longer than a probe, or a
    /// started process's copy of a descriptor on a loaded machine, and no wait for a
    /// person to notice.
    static let lockPatienceNs: UInt64 = 2_000_000_000

    /// Whether some process holds a lock on the file at `path` (shared or exclusive).
    static func isHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // Another run's own probe holds it for microseconds; only a lock that stays counts.
        let deadline = DispatchTime.now().uptimeNanoseconds + lockPatienceNs
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK else { return false }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { return true }
            usleep(10_000)
        }
        flock(fd, LOCK_UN)
        return false
    }

    /// The shard counts that have a `shards-of-N.lock` in `folder`.
    private static func shardCounts(in folder: String) -> [Int] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix("shards-of-"), name.hasSuffix(".lock") else { return nil }
            return Int(name.dropFirst("shards-of-".count).dropLast(".lock".count))
        }
    }
}
