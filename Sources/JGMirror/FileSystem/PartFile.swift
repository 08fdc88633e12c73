import Foundation

/// The `DEST.jgpart` file bytes are written into, by offset, as they arrive.
///
/// Shared by the engine thread (writes) and its item's sync queue (`fdatasync`), hence
/// a class whose descriptor closes when the last user lets go.
final class PartFile: Sendable {
    let path: String
    let fd: Int32
    /// The first failed sync. Linux reports a lost write to one sync per open file
    /// and then forgets it, so a later sync of the same bytes can succeed: the
    /// failure is kept, and every later sync and the item's completion see it; so does
    /// whoever places the file, after this object and its descriptor are gone
    /// (`ItemDurability.finish` hands on the box, not the file).
    let syncFailure = Locked<TransferError?>(nil)

    /// Opens the part file to continue it, or creates a new one when `fresh`, replacing
    /// whatever had that name (a symlink or another file's hard link is removed, never
    /// written through; a file to continue with another name is refused); never follows
    /// a symlink, in `path` or the folders above it.
    ///
    /// The file is held with an exclusive `flock` while open, and one that another
    /// process holds is neither written nor replaced: two processes can never write
    /// the same part file (shards sharing a tree are disjoint, but a manifest edited
    /// between their starts need not be).
    init(path: String, fresh: Bool, root: RootDirectory) throws(TransferError) {
        self.path = path
        let flags = O_RDWR | O_CREAT
        do {
            fd = try root.openFile(path, flags: flags | (fresh ? O_EXCL : 0))
        } catch  where fresh && error.code != .unsafePath && root.status(path) != nil {
            if Self.isHeld(path, root: root) { throw Self.busy(path) }
            guard root.unlink(path) else { throw error }
            fd = try root.openFile(path, flags: flags | O_EXCL)
        }
        // On a throw from here the descriptor closes in deinit.
        guard Self.lock(fd) else { throw Self.busy(path) }
        // A file continued must have no other name (`EarlierRun` starts over when it
        // had one; this catches a link made since).
        var info = stat()
        if !fresh, fstat(fd, &info) == 0, info.st_nlink > 1 {
            throw TransferError(code: .unsafePath, message: "\(path) has other hard links; not writing through them")
        }
    }

    /// Whether another process holds the part file at `path` open for writing.
    static func isHeld(_ path: String, root: RootDirectory) -> Bool {
        guard let fd = try? root.openFile(path, flags: O_RDONLY | O_NONBLOCK) else { return false }
        defer { close(fd) }
        return !lock(fd)
    }

    /// Takes the exclusive lock on `fd`; false when another process holds it. A lock
    /// must stay held for a second to count: a process this one started in the
    /// meantime (gpgv) holds a copy of every descriptor until it has begun its
    /// program, which a loaded machine can delay. Only a file that is busy waits.
    private static func lock(_ fd: Int32) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, DispatchTime.now().uptimeNanoseconds < deadline else {
                return false
            }
            usleep(10_000)
        }
        return true
    }

    private static func busy(_ path: String) -> TransferError {
        TransferError(code: .locked, message: "another process is writing \(path)")
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
    /// A reservation the disk refused gives back the blocks it took (a file system may
    /// keep what it allocated before it ran out), and the file is left empty.
    func reserve(_ length: Int64) throws(TransferError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw .local(errno: errno, path: path, doing: "cannot resize") }
        guard length > 0 else { return }
        let result = posix_fallocate(fd, 0, off_t(length))
        if result == ENOSPC || result == EDQUOT {
            _ = ftruncate(fd, 0)
            throw .local(errno: result, path: path, doing: "cannot reserve space for")
        }
    }

    func truncate() throws(TransferError) {
        guard ftruncate(fd, 0) == 0 else { throw .local(errno: errno, path: path, doing: "cannot truncate") }
    }

    /// Flushes written data to stable storage with `sync` (`fdatasync`; tests inject
    /// failures); fails from the first failure on.
    func syncData(using sync: (Int32) -> Int32 = fdatasync) throws(TransferError) {
        if let failure = failedSync { throw failure }
        guard sync(fd) == 0 else {
            let failure = TransferError.local(errno: errno, path: path, doing: "cannot sync")
            syncFailure.withLock { if $0 == nil { $0 = failure } }
            throw failure
        }
    }

    /// Asks the kernel to start writing the file's dirty pages back, without waiting
    /// for them. Advisory: a write error shows at the next `syncData`.
    func startWriteback(using start: (Int32) -> Int32) { _ = start(fd) }

    /// Why a sync of this file failed, if one did.
    var failedSync: TransferError? { syncFailure.value }
}
