import Foundation

/// A set published as snapshots of its own (`publish: snapshot` on a set below the
/// root, `SnapshotTree` with a scope; docs/publishing.md#a-sets-own-snapshots): the
/// rest of the run is published in order, and the set's folder is a link swapped once
/// the set alone is complete, so one set's bad list or failed file holds back that set
/// and no other.
struct SetSnapshotPublication: Publication {
    let set: SnapshotSet
    let tree: SnapshotTree
    /// Published snapshots kept: `--keep`, else the set's `keep:`, else the default.
    let keep: Int
    private(set) var prepared: SnapshotTree.Prepared?

    var prunedApart: String? { tree.building }

    /// One for each set published as snapshots of its own that the run syncs. A set
    /// whose list failed is left as it is; so is one a filter leaves out whole. A filter
    /// that selects part of such a set is refused: its snapshot needs every file.
    static func all(in plan: Plan, options: SyncOptions) throws(SyncError) -> [SetSnapshotPublication] {
        var selected: [String: Int] = [:]
        for set in plan.manifest.snapshotSets where set.files != nil { selected[set.folder] = 0 }
        guard !selected.isEmpty else { return [] }
        for item in plan.items {
            if let set = plan.manifest.snapshotSets.first(where: { $0.holds(item.dest) }) {
                selected[set.folder, default: 0] += 1
            }
        }
        var publications: [SetSnapshotPublication] = []
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
            publications.append(
                SetSnapshotPublication(set: set, tree: tree, keep: options.keep ?? set.keep ?? PublishMode.defaultKeep))
        }
        return publications
    }

    /// Builds (or resumes) the set's snapshot and moves its items and list into it.
    mutating func prepare(_ plan: inout Plan, options: SyncOptions, pool: WorkPool) async throws(SyncError) {
        prepared = try await tree.prepare(keep: keep, options: options, on: pool)
        plan.move(itemsIn: set.folder, to: tree.building)
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

    /// What a run's results say of the set.
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

    /// The set's tally from `results`.
    func tally(_ results: ReportItems) -> SetTally {
        var tally = SetTally()
        func count(_ result: ItemResult) {
            guard set.holds(result.dest) else { return }
            switch result.status {
            // A file kept for its grace period is in the snapshot, as a file is.
            case .downloaded, .unchanged, .unverified, .verified, .keptRemoved: tally.files += 1
            case .deleted, .deleteSkipped, .notServed: break
            case .failed, .mismatch, .interrupted, .skipped, .missing: tally.unclean += 1
            }
            tally.changed = tally.changed || result.changesTree
            tally.ranOutOfSpace = tally.ranOutOfSpace || result.error?.code == .diskFull
        }
        results.forEach(count)
        return tally
    }

    /// Publishes the set's snapshot when its files, list and deletions all succeeded in
    /// a run that was not stopped, and it changed something in it (or holds an earlier
    /// run's work); a set that changed nothing keeps its link where it was. A set whose
    /// link could not be swapped fails alone, in a row named by its folder.
    func finish(_ ending: RunEnding) async throws(SyncError) -> PublicationOutcome {
        let (tree, pool) = (tree, ending.pool)
        let tally = tally(ending.results)
        var outcome = SnapshotOutcome(current: tree.currentID(), published: false, folder: set.folder)
        var blocker: String?
        if ending.cancelled {
            blocker = "the run was interrupted"
        } else if tally.unclean > 0 {
            blocker = tally.unclean == 1 ? "1 of its files did not succeed" : "\(tally.unclean) of its files did not succeed"
        }
        if let blocker {
            let current = outcome.current.map { "\(tree.currentLink) still names \($0)" } ?? "nothing of it is published yet"
            if tally.ranOutOfSpace { await pool.run { SnapshotTree.mark(tree.fullMark, with: "") } }
            let line =
                "snapshot of the set at '\(set.folder)' not published (\(blocker)): \(current); \(tree.leftFor(ranOutOfSpace: tally.ranOutOfSpace))"
            return PublicationOutcome(setSnapshot: outcome, warnings: [line])
        }
        if prepared?.differs != true, !tally.changed, outcome.current != nil {
            outcome.unchanged = true
            let warning = await pool.run { [store = ending.store] in tree.leaveUnchanged(store: store) }
            return PublicationOutcome(setSnapshot: outcome, warnings: warning.map { [$0] } ?? [])
        }
        do throws(SyncError) {
            let (id, warning) = try await tree.publish(
                files: tally.files, keep: keep, store: ending.store, options: ending.options, started: ending.started, on: pool)
            outcome.current = id
            outcome.published = true
            return PublicationOutcome(setSnapshot: outcome, warnings: warning.map { [$0] } ?? [])
        } catch {
            let failed = ItemResult(
                dest: set.scope, url: "", status: .failed,
                error: ItemError(code: .ioError, message: "snapshot not published: \(error.localizedDescription)"))
            return PublicationOutcome(setSnapshot: outcome, failed: [failed])
        }
    }
}

extension Plan {
    /// Moves the items whose destination lies in `folder` (a set's, ending in `/`), and
    /// its published list, under `root` (the snapshot that set is building).
    mutating func move(itemsIn folder: String, to root: String) {
        var last: (old: ItemOptions, new: ItemOptions)?
        for index in items.indices where items[index].dest.hasPrefix(folder) { items[index].move(to: root, after: &last) }
        for index in manifest.publishGroups.indices where manifest.publishGroups[index].folder == folder {
            manifest.publishGroups[index].placedUnder = root
        }
    }
}
