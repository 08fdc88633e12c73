import Foundation

/// The `DEST.jgpart` file bytes are written into, by offset, as they arrive.
///
/// Shared by the engine thread (writes) and the checkpoint queue (`fdatasync`), hence
/// a class whose descriptor closes when the last user lets go.
final class PartFile: Sendable {
    let path: String
    let fd: Int32

    /// Opens the part file to continue it, or creates a new one when `fresh`, replacing
    /// whatever had that name (a symlink or another file's hard link is removed, never
    /// written through); never follows a symlink.
    init(path: String, fresh: Bool) throws(TransferError) {
        self.path = path
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW
        var fd = open(path, flags | (fresh ? O_EXCL : 0), 0o644)
        if fd < 0, fresh, errno == EEXIST, unlink(path) == 0 {
            fd = open(path, flags | O_EXCL, 0o644)
        }
        guard fd >= 0 else { throw .local(errno: errno, path: path, doing: "cannot open") }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(TransferError) {
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw .local(errno: errno, path: path, doing: "cannot write")
            }
            done += written
        }
    }

    /// Sets the length to `length`, reserving the blocks so a full disk shows now,
    /// not halfway through.
    func reserve(_ length: Int64) throws(TransferError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw .local(errno: errno, path: path, doing: "cannot resize") }
        guard length > 0 else { return }
        let result = posix_fallocate(fd, 0, off_t(length))
        if result == ENOSPC || result == EDQUOT { throw .local(errno: result, path: path, doing: "cannot reserve space for") }
    }

    func truncate() throws(TransferError) {
        guard ftruncate(fd, 0) == 0 else { throw .local(errno: errno, path: path, doing: "cannot truncate") }
    }

    /// Flushes written data to stable storage.
    func syncData() throws(TransferError) {
        guard fdatasync(fd) == 0 else { throw .local(errno: errno, path: path, doing: "cannot sync") }
    }
}
