import CLinux
import Foundation

/// Publishing a snapshot a clean run built: `next` named, then the link swapped to it.
extension SnapshotTree {
    /// Publishes `next`: synced (when `durable`), named, then `current` swapped to it.
    /// Returns its id.
    func publish(durable: Bool, started: Date, step: (Step) -> Void) throws(SyncError) -> String {
        step(.built)
        if durable {
            let fd = open(building, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 {
                _ = jg_syncfs(fd)
                close(fd)
            }
        }
        let next = (ids().compactMap(Self.number).max() ?? 0) + 1
        let numbered = max(next, (currentID().flatMap(Self.number) ?? 0) + 1)
        let id = String(format: "%06d-", numbered) + Self.stamp(started)
        guard rename(building, folder + "/" + id) == 0 else {
            throw .local("cannot rename \(building) to \(folder)/\(id): \(String(cString: strerror(errno)))")
        }
        Self.syncFolder(folder)
        step(.renamed)
        let temporary = newLink
        let parent = Paths.parent(of: currentLink)
        if !scope.isEmpty { try Self.makeFolders(parent) }
        unlink(temporary)
        guard symlink(linkText(to: id), temporary) == 0 else {
            throw .local("cannot point \(currentLink) at the new snapshot \(id): \(String(cString: strerror(errno)))")
        }
        do throws(SyncError) { try swap(temporary) } catch {
            unlink(temporary)
            throw error
        }
        Self.syncFolder(parent)
        step(.swapped)
        // A set's folder the link replaced on its first snapshot: its files are in the
        // snapshot, so only its names go.
        Self.clear(temporary)
        return id
    }

    /// Puts the link at `temporary` in `currentLink`'s place: one rename over the old
    /// link. A set's folder on its first snapshot is a folder, which no rename
    /// replaces: the two are exchanged (`renameat2`), leaving the folder at
    /// `temporary`; where the file system cannot exchange, the folder is moved aside
    /// first, and for that moment its name is missing.
    private func swap(_ temporary: String) throws(SyncError) {
        var info = stat()
        let isFolder = lstat(currentLink, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
        if isFolder, jg_exchange(temporary, currentLink) == 0 { return }
        if isFolder {
            let aside = temporary + "-" + String(UInt64(FileRecord.now()))
            guard rename(currentLink, aside) == 0 else {
                throw .local("cannot move the folder \(currentLink) aside: \(String(cString: strerror(errno)))")
            }
            guard rename(temporary, currentLink) == 0 else {
                let reason = String(cString: strerror(errno))
                rename(aside, currentLink)
                throw .local("cannot point \(currentLink) at the new snapshot: \(reason)")
            }
            rename(aside, temporary)
            return
        }
        guard rename(temporary, currentLink) == 0 else {
            throw .local("cannot point \(currentLink) at the new snapshot: \(String(cString: strerror(errno)))")
        }
    }

    /// `fsync` of the folder at `path`, so that a rename in it is durable.
    static func syncFolder(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// `20261127T052000Z`: when the run started, in UTC.
    static func stamp(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
            parts.tm_min, parts.tm_sec)
    }
}
