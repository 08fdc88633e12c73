import Foundation

/// `ROOT/.jgmirror.lock` held with `flock` for the whole run: one sync per root
/// (SPEC §10). The kernel drops it if the process dies, so a crash never leaves a
/// stale lock behind.
final class RootLock {
    private let fd: Int32
    let path: String

    /// Takes the lock without waiting; throws `.locked` when another process has it.
    init(root: String) throws(SyncError) {
        path = root + "/.jgmirror.lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw .local("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw .locked(path: path) }
            throw .local("cannot lock \(path): \(String(cString: strerror(code)))")
        }
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
