import Foundation

/// Sets published as snapshots of their own (`publish: snapshot` on a set below the
/// root, `SnapshotTree` with a scope): the rest of the run is published in order, and
/// each such set's folder is a link swapped once the set alone is complete, so one
/// set's bad list or failed file holds back that set and no other.
extension SyncSession {
    /// One set's snapshot as a run builds it.
    struct SetSnapshot: Sendable {
        let set: SnapshotSet
        let tree: SnapshotTree
        let prepared: SnapshotTree.Prepared
    }

    /// Refuses a tree whose set folders are links to set snapshots the run would not
    /// follow: under `--publish snapshot` (the whole tree would be built around the
    /// link), or for a set that no longer says `publish: snapshot` (its files would be
    /// placed through the link, into a published snapshot).
    static func checkSetLinks(_ plan: Plan, mode: PublishMode) throws(SyncError) {
        let own = Set(plan.manifest.snapshotSets.map(\.folder))
        for folder in Set(plan.manifest.setFolders) where !folder.isEmpty && (mode == .snapshot || !own.contains(folder)) {
            let tree = SnapshotTree(root: plan.root, scope: String(folder.dropLast()))
            guard let id = tree.currentID() else { continue }
            let link = tree.currentLink
            let fix =
                mode == .snapshot
                ? "the whole tree cannot be published as one snapshot around it: drop --publish snapshot"
                : "its set no longer says 'publish: snapshot': put that back"
            throw .usage(
                UsageError(
                    "\(link) is a link to \(id), a snapshot of the set at '\(folder)'; \(fix), or replace the link by a copy of the folder it names (cp -rL) first"
                ))
        }
    }

    /// Prepares the snapshot each set published as snapshots of its own builds this
    /// run, and moves the set's items and list into it. A set whose list failed is
    /// left as it is; so is one a filter leaves out whole. A filter that selects part
    /// of such a set is refused: its snapshot needs every file.
    static func prepareSetSnapshots(
        _ plan: inout Plan, options: SyncOptions, pool: WorkPool
    ) async throws(SyncError) -> [SetSnapshot] {
        var selected: [String: Int] = [:]
        for set in plan.manifest.snapshotSets where set.files != nil { selected[set.folder] = 0 }
        guard !selected.isEmpty else { return [] }
        for item in plan.items {
            if let set = plan.manifest.snapshotSets.first(where: { $0.holds(item.dest) }) {
                selected[set.folder, default: 0] += 1
            }
        }
        var snapshots: [SetSnapshot] = []
        for set in plan.manifest.snapshotSets {
            guard let files = set.files, let count = selected[set.folder], count > 0 || !plan.isFiltered else { continue }
            if count != files {
                throw .usage(
                    UsageError(
                        "--tag, --skip-tag or --shard selects \(count) of the \(files) files of the set at '\(set.folder)', which is published as snapshots of its own; a snapshot needs them all: select the whole set or none of it"
                    ))
            }
            let tree = SnapshotTree(root: plan.root, set: set)
            try checkLinkPlace(tree)
            let keep = options.keep ?? set.keep ?? PublishMode.defaultKeep
            let prepared = try await tree.prepare(keep: keep, options: options, on: pool)
            snapshots.append(SetSnapshot(set: set, tree: tree, prepared: prepared))
            plan.move(itemsIn: set.folder, to: tree.building)
        }
        return snapshots
    }

    /// A set's folder must be a folder, missing, or a link this tree made, and the
    /// folders above it real ones: the link is made and swapped by its path, which
    /// must not lead out of the root through a symlink.
    private static func checkLinkPlace(_ tree: SnapshotTree) throws(SyncError) {
        var info = stat()
        var above = tree.root
        for name in tree.scope.split(separator: "/").dropLast() {
            above += "/" + name
            guard lstat(above, &info) == 0 else { break }
            if (info.st_mode & S_IFMT) != S_IFDIR {
                throw .usage(
                    UsageError(
                        "\(above) is not a folder (a symbolic link, say), where the set published as snapshots of its own has its folder below; jgmirror never follows one below the root"
                    ))
            }
        }
        guard lstat(tree.currentLink, &info) == 0 else { return }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return
        case S_IFLNK where tree.currentID() != nil: return
        case S_IFLNK:
            throw .usage(
                UsageError(
                    "\(tree.currentLink) is a symbolic link jgmirror did not make, where the set published as snapshots of its own puts its link; remove it first"
                ))
        default:
            throw .usage(
                UsageError(
                    "\(tree.currentLink) is not a folder, where the set published as snapshots of its own puts its link; remove it first"
                ))
        }
    }

    /// What a run's results say of one set published as snapshots of its own.
    struct SetTally {
        /// Files in place (for the database's record of the snapshot).
        var files = 0
        /// Results of the set that did not succeed.
        var unclean = 0
        /// A result placed or deleted something in the set's snapshot.
        var changed = false
        /// A result ran out of space.
        var ranOutOfSpace = false
    }

    /// Each set's tally from `results`.
    static func tally(_ snapshots: [SetSnapshot], results: ReportItems) -> [SetTally] {
        var tallies = [SetTally](repeating: SetTally(), count: snapshots.count)
        func count(_ result: ItemResult) {
            guard let index = snapshots.firstIndex(where: { $0.set.holds(result.dest) }) else { return }
            switch result.status {
            case .downloaded, .unchanged, .unverified, .verified: tallies[index].files += 1
            case .deleted, .deleteSkipped: break
            case .failed, .mismatch, .interrupted, .skipped, .missing: tallies[index].unclean += 1
            }
            tallies[index].changed = tallies[index].changed || result.changesTree
            tallies[index].ranOutOfSpace = tallies[index].ranOutOfSpace || result.error?.code == .diskFull
        }
        results.forEach(count)
        return tallies
    }

    /// Publishes each set's snapshot whose files, list and deletions all succeeded in
    /// a run that was not stopped, and that changed something in it (or holds an
    /// earlier run's work); a set that changed nothing keeps its link where it was
    /// (docs/publishing.md#a-sets-own-snapshots). Returns what the report says of each
    /// set, the report's warnings (a set left as it was, a failed database write), and
    /// a failed row, named by the set's folder, for each set whose link could not be
    /// swapped: that set keeps its link where it was and fails no other.
    static func finishSetSnapshots(
        _ snapshots: [SetSnapshot], results: ReportItems, cancelled: Bool, store: StateStore?, options: SyncOptions,
        started: Date, pool: WorkPool
    ) async -> (outcomes: [SnapshotOutcome], warnings: [String], failed: [ItemResult]) {
        guard !snapshots.isEmpty else { return ([], [], []) }
        let tallies = tally(snapshots, results: results)
        var outcomes: [SnapshotOutcome] = []
        var warnings: [String] = []
        var failed: [ItemResult] = []
        for (snapshot, tally) in zip(snapshots, tallies) {
            let tree = snapshot.tree
            var outcome = SnapshotOutcome(current: tree.currentID(), published: false, folder: snapshot.set.folder)
            var blocker: String?
            if cancelled {
                blocker = "the run was interrupted"
            } else if tally.unclean > 0 {
                blocker = tally.unclean == 1 ? "1 of its files did not succeed" : "\(tally.unclean) of its files did not succeed"
            }
            if let blocker {
                let current = outcome.current.map { "\(tree.currentLink) still names \($0)" } ?? "nothing of it is published yet"
                if tally.ranOutOfSpace { await pool.run { SnapshotTree.mark(tree.fullMark, with: "") } }
                warnings.append(
                    "snapshot of the set at '\(snapshot.set.folder)' not published (\(blocker)): \(current); \(tree.leftFor(ranOutOfSpace: tally.ranOutOfSpace))"
                )
            } else if !snapshot.prepared.differs, !tally.changed, outcome.current != nil {
                if let warning = await pool.run({ tree.leaveUnchanged(store: store) }) { warnings.append(warning) }
                outcome.unchanged = true
            } else {
                do throws(SyncError) {
                    let keep = options.keep ?? snapshot.set.keep ?? PublishMode.defaultKeep
                    let (id, warning) = try await tree.publish(
                        files: tally.files, keep: keep, store: store, options: options, started: started, on: pool)
                    outcome.current = id
                    outcome.published = true
                    if let warning { warnings.append(warning) }
                } catch {
                    failed.append(
                        ItemResult(
                            dest: snapshot.set.scope, url: "", status: .failed,
                            error: ItemError(code: .ioError, message: "snapshot not published: \(error.localizedDescription)")))
                }
            }
            outcomes.append(outcome)
        }
        return (outcomes, warnings, failed)
    }
}

extension Plan {
    /// Moves the items whose destination lies in `folder` (a set's, ending in `/`), and
    /// its published list, under `root` (the snapshot that set is building).
    mutating func move(itemsIn folder: String, to root: String) {
        var last: (old: PlannedItemOptions, new: PlannedItemOptions)?
        for index in items.indices where items[index].dest.hasPrefix(folder) { items[index].move(to: root, after: &last) }
        for index in manifest.publishedLists.indices where manifest.publishedLists[index].folder == folder {
            manifest.publishedLists[index].placedUnder = root
        }
    }
}
