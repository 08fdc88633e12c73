import CLinux
import Foundation

/// Snapshot publishing (`--publish snapshot`, a set's `publish: snapshot`; SPEC §10b):
/// the run builds the new state of the tree beside the one readers see, then swaps
/// one symlink, so a reader meets the old tree or the new one, never a mix.
///
/// On disk, under the manifest's root:
///
///     current -> .jgmirror/snapshots/000042-20261127T052000Z   what readers serve
///     .jgmirror/snapshots/000042-20261127T052000Z/             published snapshots
///     .jgmirror/snapshots/next/                                the one being built
///
/// `next` starts as a copy of the current snapshot made of hard links (no byte is
/// copied: an unchanged file is the same inode in both), then the run places new and
/// replaced files there as it would in the tree, and `--delete` prunes there. Only a
/// clean run publishes: `next` is renamed to its id and `current` is replaced by a
/// link made under a temporary name and renamed over it. A failed, interrupted or
/// killed run leaves `current` where it was and `next` in place, and the next run
/// resumes it (its part files and the files it placed are kept). No file in a
/// snapshot is ever written in place: a sync replaces a file by renaming a new one
/// over its name, so a hard link shared with a published snapshot is never changed.
package struct SnapshotTree {
    /// The link readers serve, at the root.
    static let currentName = "current"
    /// `ROOT/.jgmirror/<folderName>`.
    static let folderName = "snapshots"
    static let buildingName = "next"
    /// `next` while its links are being made; removed when a run finds it.
    static let cloningName = ".cloning"
    /// The link's temporary name while it is swapped in.
    static let newLinkName = ".current.jgtmp"

    /// The manifest's root.
    let root: String
    var folder: String { root + "/" + StateFolder.name + "/" + Self.folderName }
    var building: String { folder + "/" + Self.buildingName }
    var currentLink: String { root + "/" + Self.currentName }

    /// Where a step of publishing has got to; the CLI's crash test kills itself at each.
    package enum Step: String, Sendable, CaseIterable {
        /// Halfway through linking the current snapshot's files into the new one.
        case cloning
        /// The run is over and clean; nothing is published yet.
        case built
        /// The new snapshot has its id; `current` is not swapped yet.
        case renamed
        /// `current` names the new snapshot; nothing is pruned yet.
        case swapped
        /// One old snapshot is removed (when a run starts, before `cloning`).
        case pruning
    }

    /// A file linked from the current snapshot (`RelinkedFile`).
    typealias Linked = RelinkedFile

    /// The id `ROOT/current` names, when it is a link into the snapshots folder.
    func currentID() -> String? {
        guard let target = Symlink.target(currentLink) else { return nil }
        let prefix = StateFolder.name + "/" + Self.folderName + "/"
        guard target.hasPrefix(prefix) else { return nil }
        let id = String(target.dropFirst(prefix.count))
        return Self.number(of: id) != nil && !id.contains("/") ? id : nil
    }

    /// The published tree of `root` (what `current` names), when it has one: what
    /// `verify` and `plan` look at.
    static func publishedTree(root: String) -> String? {
        let tree = SnapshotTree(root: root)
        return tree.currentID().map { tree.folder + "/" + $0 }
    }

    /// The sequence number an id starts with; nil for a name that is not an id.
    static func number(of id: String) -> Int? {
        guard let dash = id.firstIndex(of: "-") else { return nil }
        return Int(id[..<dash])
    }

    /// The published snapshots' ids (not `next`), oldest first.
    func ids() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name in Self.number(of: name).map { (name, $0) } }.sorted { $0.1 < $1.1 }.map(\.0)
    }

    /// What `prepare` did: the files it linked, whose records the run brings up to
    /// date, and the old snapshots it removed.
    struct Prepared: Sendable {
        var linked: [Linked] = []
        var pruned: [String] = []
        /// Why the expired snapshot could not be reused, for the report's warnings.
        var warning: String?
    }

    /// Makes `next` ready for the run: resumed when an earlier run left it (or left a
    /// snapshot built but never swapped in), else linked from the current snapshot
    /// (or, on a tree's first snapshot run, from the files at the root), after the
    /// published snapshots past the newest `keep - 1` are removed (with `next`, that
    /// makes `keep`). When one snapshot is past them, it is not removed but becomes
    /// `next`, brought to the current snapshot's state (`reuse`).
    ///
    /// Removing an old snapshot unlinks its names of files the current one shares,
    /// which moves their ctime as linking does: the current files are looked at
    /// before either, so that their records can follow both (`StateStore.refresh`).
    /// Call it from a blocking job of `pool`: it waits for another (the removal).
    func prepare(keep: Int, pool: WorkPool, step: @escaping @Sendable (Step) -> Void) throws(SyncError) -> Prepared {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .local("cannot create \(folder): \(error.localizedDescription)")
        }
        let cloning = folder + "/" + Self.cloningName
        Self.clear(cloning)
        if access(building, F_OK) == 0 { return Prepared() }
        let current = currentID()
        // Killed between naming the new snapshot and swapping the link: that snapshot
        // was built by a clean run but never published, so it is resumed.
        let currentNumber = current.flatMap(Self.number) ?? 0
        if let unpublished = ids().last(where: { (Self.number(of: $0) ?? 0) > currentNumber }) {
            if rename(folder + "/" + unpublished, building) == 0 { return Prepared() }
        }
        let source = current.map { folder + "/" + $0 } ?? root
        var old = ids().filter { (Self.number(of: $0) ?? 0) <= currentNumber && $0 != current }.dropLast(max(0, keep - 2))
        var prepared = Prepared()
        // The one snapshot this run would prune becomes `next` instead (`reuse`). When
        // several go (keep was lowered), removing the others moves the ctime of files
        // the current snapshot shares, which the fresh link below follows.
        if old.count == 1, rename(folder + "/" + old[0], cloning) == 0 {
            step(.pruning)
            do throws(SyncError) {
                prepared.linked = try Self.reuse(cloning, toMatch: source, step: step)
                prepared.pruned = Array(old)
                return try finished(prepared, in: cloning)
            } catch {
                // A tree it cannot bring to the current state (a name that is not
                // UTF-8, a folder it may not write): removed, as it would have been,
                // and `next` is linked afresh. What cannot be removed goes back under
                // its name, as a snapshot that could not be pruned always stayed.
                prepared.warning = "snapshot \(old[0]) not reused for the new one (\(error.localizedDescription)); linked afresh"
                if (try? FileManager.default.removeItem(atPath: cloning)) != nil {
                    prepared.pruned = Array(old)
                } else {
                    rename(cloning, folder + "/" + old[0])
                }
                prepared.linked = []
            }
            old = []
        }
        let before = Self.stats(under: source, skippingRootNames: current == nil)
        guard mkdir(cloning, 0o755) == 0 else { throw .local("cannot create \(cloning): \(String(cString: strerror(errno)))") }
        // The old snapshots are removed by a job of their own while `next` is linked;
        // the files are looked at again once both are over (`settle`).
        let pruned = Locked<[String]>([])
        let pruning = DispatchGroup()
        if !old.isEmpty {
            pruning.enter()
            pool.submit(.blocking) { [folder, old] in
                for id in old where (try? FileManager.default.removeItem(atPath: folder + "/" + id)) != nil {
                    pruned.withLock { $0.append(id) }
                    step(.pruning)
                }
                pruning.leave()
            }
        }
        let linking = Result { () throws(SyncError) in
            try Self.link(from: source, into: cloning, skippingRootNames: current == nil, before: before, step: step)
        }
        pruning.wait()
        prepared.pruned += pruned.value
        prepared.linked = try linking.get()
        return try finished(prepared, in: cloning)
    }

    /// `prepared` once its linked files are looked at again (`settle`) and the folder
    /// they were linked into, `cloning`, is named `next`.
    private func finished(_ prepared: Prepared, in cloning: String) throws(SyncError) -> Prepared {
        var prepared = prepared
        Self.settle(&prepared.linked, in: cloning)
        guard rename(cloning, building) == 0 else {
            throw .local("cannot rename \(cloning) to \(building): \(String(cString: strerror(errno)))")
        }
        return prepared
    }

    /// Removes what a killed run left at `path`; what cannot be removed (a folder made
    /// unwritable since) is moved aside under a name no snapshot has, so that it
    /// never stops a later run.
    private static func clear(_ path: String) {
        guard access(path, F_OK) == 0, (try? FileManager.default.removeItem(atPath: path)) == nil else { return }
        rename(path, path + "-" + String(UInt64(FileRecord.now())))
    }

    /// The stat of every regular file under `source`, by its path below it.
    private static func stats(under source: String, skippingRootNames: Bool) -> [String: FileStat] {
        var found: [String: FileStat] = [:]
        TreeWalker.walk(root: source) { relative, kind in
            if skippingRootNames, rootNames.contains(relative) { return .skip }
            if case .file = kind, let stat = FileStat.of(path: source + "/" + relative) { found[relative] = stat }
            return kind == .folder ? .enter : .skip
        }
        return found
    }

    /// What a tree's first snapshot does not take from the root.
    private static let rootNames = [StateFolder.name, currentName, newLinkName]

    /// Links every file under `source` into `target` (folders made, symlinks copied);
    /// part files, resume state and quarantined bytes stay behind.
    private static func link(
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
    private static func settle(_ linked: inout [Linked], in folder: String) {
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
        let temporary = root + "/" + Self.newLinkName
        unlink(temporary)
        guard symlink(StateFolder.name + "/" + Self.folderName + "/" + id, temporary) == 0,
            rename(temporary, currentLink) == 0
        else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .local("cannot point \(currentLink) at the new snapshot \(id): \(reason)")
        }
        Self.syncFolder(root)
        step(.swapped)
        return id
    }

    private static func syncFolder(_ path: String) {
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
