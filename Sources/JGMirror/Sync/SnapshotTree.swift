import CLinux
import Foundation

/// Snapshot publishing (`--publish snapshot`, a set's `publish: snapshot`; docs/publishing.md#snapshot):
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
/// clean run that changed something publishes: `next` is renamed to its id and
/// `current` is replaced by a link made under a temporary name and renamed over it;
/// one that changed nothing leaves `current`, and `next` for the run after it
/// (`SnapshotTree+Retire.swift`: which snapshots are kept, and when they go). A failed, interrupted or
/// killed run leaves `current` where it was and `next` in place, and the next run
/// resumes it (its part files and the files it placed are kept). No file in a
/// snapshot is ever written in place: a sync replaces a file by renaming a new one
/// over its name, so a hard link shared with a published snapshot is never changed.
///
/// A set below the root with `publish: snapshot` has snapshots of its own, holding its
/// folder alone at the same path, and its folder is the link (the tree's other files
/// are published in order):
///
///     ubuntu/24.04 -> ../.jgmirror/set-snapshots/ubuntu%2F24.04/000007-20261127T052000Z/ubuntu/24.04
///     .jgmirror/set-snapshots/ubuntu%2F24.04/000007-20261127T052000Z/ubuntu/24.04/   its snapshots
///     .jgmirror/set-snapshots/ubuntu%2F24.04/next/ubuntu/24.04/                      the one being built
///
/// Each of its files keeps its destination below the snapshot, so its record in the
/// state database is the one it had in the tree.
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

    /// `ROOT/.jgmirror/<setFolderName>/<key>`: a set's own snapshots.
    static let setFolderName = "set-snapshots"

    /// The manifest's root.
    let root: String
    /// What the snapshots publish, relative to the root: "" for the whole tree (read
    /// through `ROOT/current`), else a set's folder without its `/`, which is the link.
    let scope: String

    init(root: String, scope: String = "") {
        self.root = root
        self.scope = scope
    }

    /// The snapshots of the set whose folder is `set.folder`.
    init(root: String, set: SnapshotSet) { self.init(root: root, scope: set.scope) }

    var folder: String {
        let state = root + "/" + StateFolder.name + "/"
        return scope.isEmpty ? state + Self.folderName : state + Self.setFolderName + "/" + Self.key(scope)
    }
    var building: String { folder + "/" + Self.buildingName }
    var currentLink: String { root + "/" + (scope.isEmpty ? Self.currentName : scope) }
    /// The link's temporary name while it is swapped in, beside it.
    var newLink: String {
        scope.isEmpty
            ? root + "/" + Self.newLinkName : Paths.parent(of: currentLink) + "/." + Paths.lastComponent(of: scope) + ".jglink"
    }

    /// The text of the link to snapshot `id`: relative, so the tree can be moved or
    /// served from another mount point.
    func linkText(to id: String) -> String { linkPrefix + id + (scope.isEmpty ? "" : "/" + scope) }

    /// What the link's text holds before a snapshot's id.
    private var linkPrefix: String {
        if scope.isEmpty { return StateFolder.name + "/" + Self.folderName + "/" }
        let depth = scope.utf8.count(where: { $0 == UInt8(ascii: "/") })
        return String(repeating: "../", count: depth) + StateFolder.name + "/" + Self.setFolderName + "/" + Self.key(scope) + "/"
    }

    /// A set folder's name under `set-snapshots`: its path with `%` and `/`
    /// percent-encoded (`ubuntu/24.04` is `ubuntu%2F24.04`), or, past what one name may
    /// hold, its start and a hash of the whole.
    static func key(_ scope: String) -> String {
        var key = ""
        for character in scope {
            switch character {
            case "%": key += "%25"
            case "/": key += "%2F"
            default: key.append(character)
            }
        }
        guard key.utf8.count > 200 else { return key }
        let start = String(decoding: key.utf8.prefix(120), as: UTF8.self).filter { $0 != "\u{FFFD}" }
        return start + "-" + String(StableHash.fnv1a64(scope), radix: 16)
    }

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
        /// One old snapshot is retired (once a run published, or when a run starts).
        case pruning
    }

    /// A file linked from the current snapshot (`RelinkedFile`).
    typealias Linked = RelinkedFile

    /// The id `ROOT/current` names, when it is a link into the snapshots folder.
    func currentID() -> String? {
        guard let target = Symlink.target(currentLink) else { return nil }
        let suffix = scope.isEmpty ? "" : "/" + scope
        guard target.hasPrefix(linkPrefix), target.hasSuffix(suffix),
            target.utf8.count >= linkPrefix.utf8.count + suffix.utf8.count
        else { return nil }
        let id = String(target.dropFirst(linkPrefix.count).dropLast(suffix.count))
        return Self.number(of: id) != nil && !id.contains("/") ? id : nil
    }

    /// The published tree of `root` (what `current` names), when it has one: what
    /// `verify` and `plan` look at.
    static func publishedTree(root: String) -> String? { SnapshotTree(root: root).published }

    /// The published snapshot's folder, when there is one: the root its files are under.
    var published: String? { currentID().map { folder + "/" + $0 } }

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
        /// The tree's `scope`: whose snapshot records `pruned` names.
        var scope = ""
        var linked: [Linked] = []
        var pruned: [String] = []
        /// Why the expired snapshot could not be reused, for the report's warnings.
        var warning: String?
        /// `next` may differ from what readers see: it holds an earlier run's work, or
        /// nothing is published yet. A clean run publishes it then even when the run
        /// itself changed nothing (docs/publishing.md#snapshot).
        var differs = false
    }

    /// Makes `next` ready for the run, after the published snapshots past the newest
    /// `keep` are retired (docs/publishing.md#snapshot): a disk that filled once
    /// recovers as soon as the release fits beside them.
    ///
    /// `next` is resumed when an earlier run left it: unfinished, built but never
    /// swapped in, or left by a run that changed nothing (a copy of the current
    /// snapshot, which a publishing run also prepares, `retireAfterPublishing`). One
    /// left by a run that ran out of space is removed instead: what it holds is what
    /// filled the disk. Otherwise `next` is linked from the current snapshot (or, on a
    /// tree's first snapshot run, from the files at the root); when one snapshot is
    /// past `keep`, it is not removed but becomes `next`, brought to the current
    /// snapshot's state (`reuse`).
    ///
    /// Removing an old snapshot unlinks its names of files the current one shares,
    /// which moves their ctime as linking does: the current files are looked at
    /// before either, so that their records can follow both (`StateStore.refresh`).
    /// Call it from a blocking job of `pool`: it waits for another (the removal).
    func prepare(keep: Int, pool: WorkPool, step: @escaping @Sendable (Step) -> Void) throws(SyncError) -> Prepared {
        try Self.makeFolders(folder)
        let cloning = folder + "/" + Self.cloningName
        Self.clear(cloning)
        // What a run killed while it swapped a set's folder left beside it: its
        // temporary link, or the folder the link replaced (its files are in a snapshot).
        if !scope.isEmpty { Self.clear(newLink) }
        let current = currentID()
        // Read once, and gone before the run places anything in `next`.
        let copyOf = Self.take(unchangedMark)
        let ranOutOfSpace = Self.take(fullMark) != nil
        // Killed between naming the new snapshot and swapping the link: that snapshot
        // was built by a clean run but never published, so it is resumed.
        let currentNumber = current.flatMap(Self.number) ?? 0
        if access(building, F_OK) != 0, let unpublished = ids().last(where: { (Self.number(of: $0) ?? 0) > currentNumber }) {
            rename(folder + "/" + unpublished, building)
        }
        if access(building, F_OK) == 0 {
            if !ranOutOfSpace {
                var prepared = retire(beyond: keep, current: current, keepingRecordsOf: building, step: step)
                prepared.differs = current == nil || copyOf != current
                return prepared
            }
            try Self.discard(building, via: cloning)
        }
        return try prepareAfresh(keep: keep, current: current, pool: pool, step: step)
    }

    /// `prepare` without a `next` to resume: linked from the current snapshot, after
    /// the snapshots past `keep` are removed, or reusing the one of them.
    private func prepareAfresh(
        keep: Int, current: String?, pool: WorkPool, step: @escaping @Sendable (Step) -> Void
    ) throws(SyncError) -> Prepared {
        let cloning = folder + "/" + Self.cloningName
        let currentNumber = current.flatMap(Self.number) ?? 0
        // A tree's first snapshot takes the files at the root; a set's, those in its
        // folder (at the same path inside the snapshot), when it is a folder.
        let first = firstSource()
        let source = current.map { folder + "/" + $0 } ?? first.path
        var old = ids().filter { (Self.number(of: $0) ?? 0) <= currentNumber && $0 != current }.dropLast(max(0, keep - 1))
        var prepared = Prepared(scope: scope, differs: current == nil)
        // The one snapshot this run would prune becomes `next` instead (`reuse`). When
        // several go (keep was lowered), removing the others moves the ctime of files
        // the current snapshot shares, which the fresh link below follows.
        if old.count == 1, let current, rename(folder + "/" + old[old.startIndex], cloning) == 0 {
            step(.pruning)
            do throws(SyncError) {
                prepared.linked = try Self.reuse(cloning, toMatch: folder + "/" + current, step: step)
                prepared.pruned = Array(old)
                return try finished(prepared, in: cloning)
            } catch {
                prepared = Self.gaveUp(reusing: old[old.startIndex], in: folder, cloning: cloning, error, into: prepared)
            }
            old = []
        }
        let skippingRootNames = current == nil && scope.isEmpty
        let before = source.map { Self.stats(under: $0, skippingRootNames: skippingRootNames) } ?? [:]
        guard mkdir(cloning, 0o755) == 0 else { throw .local("cannot create \(cloning): \(String(cString: strerror(errno)))") }
        let into = current == nil ? cloning + first.inside : cloning
        if into != cloning { try Self.makeFolders(into) }
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
            guard let source else { return [Linked]() }
            let linked = try Self.link(from: source, into: into, skippingRootNames: skippingRootNames, before: before, step: step)
            let prefix = current == nil ? String(first.inside.dropFirst()) + (first.inside.isEmpty ? "" : "/") : ""
            return prefix.isEmpty ? linked : linked.map { Linked(dest: prefix + $0.dest, before: $0.before, after: $0.after) }
        }
        pruning.wait()
        prepared.pruned += pruned.value
        prepared.linked = try linking.get()
        return try finished(prepared, in: cloning)
    }

    /// Where a first snapshot takes its files from: the root for the whole tree; for a
    /// set, its folder when that is a folder (nil when there is none yet), linked into
    /// the same path inside the snapshot (`inside`: `/` and the set's folder).
    private func firstSource() -> (path: String?, inside: String) {
        guard !scope.isEmpty else { return (root, "") }
        var info = stat()
        let isFolder = lstat(currentLink, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
        return (isFolder ? currentLink : nil, "/" + scope)
    }

    /// `mkdir -p path`.
    static func makeFolders(_ path: String) throws(SyncError) {
        do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) } catch {
            throw .local("cannot create \(path): \(error.localizedDescription)")
        }
    }

    /// `prepared` once its linked files are looked at again (`settle`) and the folder
    /// they were linked into, `cloning`, is named `next`.
    func finished(_ prepared: Prepared, in cloning: String) throws(SyncError) -> Prepared {
        var prepared = prepared
        // A set's folder is there even when its list names no file: the link needs it.
        if !scope.isEmpty { try Self.makeFolders(cloning + "/" + scope) }
        Self.settle(&prepared.linked, in: cloning)
        guard rename(cloning, building) == 0 else {
            throw .local("cannot rename \(cloning) to \(building): \(String(cString: strerror(errno)))")
        }
        return prepared
    }

    /// Removes what a killed run left at `path`; what cannot be removed (a folder made
    /// unwritable since) is moved aside under a name no snapshot has, so that it
    /// never stops a later run.
    static func clear(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, (try? FileManager.default.removeItem(atPath: path)) == nil else { return }
        rename(path, path + "-" + String(UInt64(FileRecord.now())))
    }
}
