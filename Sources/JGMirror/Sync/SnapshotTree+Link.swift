import CLinux
import Foundation

/// Linking a snapshot's files into another, and looking at them once linked.
extension SnapshotTree {
    /// The stat of every regular file under `source`, by its path below it.
    static func stats(under source: String, skippingRootNames: Bool) -> [String: FileStat] {
        var found: [String: FileStat] = [:]
        TreeWalker.walk(root: source) { relative, kind in
            if skippingRootNames, rootNames.contains(relative) { return .skip }
            if case .file = kind, let stat = FileStat.of(path: source + "/" + relative) { found[relative] = stat }
            return kind == .folder ? .enter : .skip
        }
        return found
    }

    /// What a tree's first snapshot does not take from the root.
    static let rootNames = [StateFolder.name, currentName, newLinkName]

    /// Links every file under `source` into `target` (folders made, symlinks copied);
    /// part files, resume state and quarantined bytes stay behind.
    static func link(
        from source: String, into target: String, skippingRootNames: Bool, before known: [String: FileStat],
        step: (Step) -> Void
    ) throws(SyncError) -> [Linked] {
        var linked: [Linked] = []
        var failure: String?
        var files = 0
        TreeWalker.walk(root: source) { relative, kind in
            guard failure == nil else { return .skip }
            if skippingRootNames, rootNames.contains(relative) { return .skip }
            let from = source + "/" + relative
            let to = target + "/" + relative
            switch kind {
            case .folder:
                if mkdir(to, 0o755) != 0 { failure = "cannot create \(to): \(String(cString: strerror(errno)))" }
                return .enter
            case .symlink:
                if let link = Symlink.target(from), symlink(link, to) != 0 {
                    failure = "cannot create \(to): \(String(cString: strerror(errno)))"
                }
            case .file:
                guard !DestinationPath.reservedSuffixes.contains(where: relative.hasSuffix), let before = known[relative] else {
                    return .skip
                }
                guard linkat(AT_FDCWD, from, AT_FDCWD, to, 0) == 0 else {
                    failure = "cannot link \(from) to \(to): \(String(cString: strerror(errno)))"
                    return .skip
                }
                linked.append(Linked(dest: relative, before: before, after: before))
                files += 1
                if files == 2 { step(.cloning) }
            case .other:
                break
            }
            return .skip
        }
        if let failure { throw .local(failure) }
        return linked
    }

    /// Looks at each linked file again (`Linked.after`) once every link is made and
    /// every old snapshot removed, and marks those the file system's clock has passed
    /// (`RecordSettling`'s rule: the clock is read first, then the file). Files still
    /// in the clock's current tick are looked at again a tick later, for a few ticks
    /// at most; a file that is gone is dropped.
    static func settle(_ linked: inout [Linked], in folder: String) {
        let clockFile = open(folder, jg_o_tmpfile | O_WRONLY | O_CLOEXEC, 0o600)
        defer { if clockFile >= 0 { close(clockFile) } }
        let deadline = FileRecord.now() + RecordSettling.finalWaitNs
        var pending = Array(linked.indices)
        var gone: [Int] = []
        while !pending.isEmpty {
            let clock = clockFile >= 0 ? RootDirectory.fileSystemTime(of: clockFile) : nil
            var still: [Int] = []
            for index in pending {
                var info = stat()
                guard lstat(folder + "/" + linked[index].dest, &info) == 0 else {
                    gone.append(index)
                    continue
                }
                let after = FileStat(info)
                linked[index].after = after
                if let clock, max(after.mtimeNs, after.ctimeNs) < clock {
                    linked[index].settled = true
                } else {
                    still.append(index)
                }
            }
            guard clock != nil, FileRecord.now() < deadline else { break }
            pending = still
            if !pending.isEmpty { usleep(1000) }
        }
        for index in gone.reversed() { linked.remove(at: index) }
    }
}
