import Foundation

/// How the changes a run makes become visible to the tree's readers
/// (docs/publishing.md), chosen once per run (`Publications.choose`), before anything
/// is fetched:
/// - `OrderedPublication`: in place, each kind of change after the ones it names —
///   files, then lists, then links, then deletions (`ItemRunner` and the deletions
///   step keep that order);
/// - `TreeSnapshotPublication`: the whole tree built as a snapshot beside the one
///   readers see, then one link swapped;
/// - `SetSnapshotPublication`: in an ordered run, one set's folder built and swapped
///   that way, apart from the rest of the tree.
protocol Publication: Sendable {
    /// Makes ready where the run builds what this publication shows, and moves the
    /// plan's items there. Called once the plan is complete, before the state database
    /// opens.
    mutating func prepare(_ plan: inout Plan, options: SyncOptions, pool: WorkPool) async throws(SyncError)
    /// What `prepare` found and did to an earlier run's snapshot, for the state
    /// database; nil for a publication that builds in place.
    var prepared: SnapshotTree.Prepared? { get }
    /// A folder `--delete` prunes on its own, apart from the tree: a set's snapshot
    /// being built.
    var prunedApart: String? { get }
    /// Once every file, list, link and deletion is in place where it was built: makes
    /// them visible, or says why not. Throws what stops the run as a whole.
    func finish(_ ending: RunEnding) async throws(SyncError) -> PublicationOutcome
}

/// What a publication's `finish` weighs: how the run went, and what it may use.
struct RunEnding: Sendable {
    var results: ReportItems
    var cancelled: Bool
    /// Why the run as a whole may not publish (an item or a list failed, a cancel;
    /// `SyncSession.uncleanRun`), nil for a clean run.
    var unclean: String?
    var store: StateStore?
    var options: SyncOptions
    var started: Date
    var pool: WorkPool
    /// Files the plan places, for the database's record of a snapshot.
    var files: Int
}

/// What one publication's end gives the report.
struct PublicationOutcome: Sendable {
    /// The whole tree's snapshot (`snapshot` in the report).
    var snapshot: SnapshotOutcome?
    /// A set's own snapshot (one of `set_snapshots`).
    var setSnapshot: SnapshotOutcome?
    var warnings: [String] = []
    /// Rows for what could not be published (a set whose link could not be swapped).
    var failed: [ItemResult] = []
}

/// In place, in order: nothing to prepare or swap, as `ItemRunner` and the deletions
/// step place each kind of change after the ones it names (docs/publishing.md#ordered).
struct OrderedPublication: Publication {
    func prepare(_ plan: inout Plan, options: SyncOptions, pool: WorkPool) async throws(SyncError) {}
    var prepared: SnapshotTree.Prepared? { nil }
    var prunedApart: String? { nil }
    func finish(_ ending: RunEnding) async throws(SyncError) -> PublicationOutcome { PublicationOutcome() }
}

/// Choosing how a run publishes.
enum Publications {
    /// The run's publications: the whole tree as a snapshot (`--publish snapshot`, or a
    /// set at the root asking for one), else in order, with a snapshot of its own for
    /// each set below the root that asks for one. A one-off download publishes in place.
    static func choose(for plan: Plan, options: SyncOptions, usesState: Bool) throws(SyncError) -> [any Publication] {
        guard usesState else { return [OrderedPublication()] }
        let mode = try publishMode(plan, options: options)
        try checkSetLinks(plan, mode: mode)
        if mode == .snapshot { return [TreeSnapshotPublication(root: plan.root, keep: keptSnapshots(plan, options: options))] }
        return [OrderedPublication()] + (try SetSnapshotPublication.all(in: plan, options: options))
    }

    /// How the run of `plan` publishes: `options.publish`, else a snapshot when a set
    /// asks for one. A run that would publish in order into a tree that holds
    /// snapshots is refused: it would change files a published snapshot shares.
    static func publishMode(_ plan: Plan, options: SyncOptions) throws(SyncError) -> PublishMode {
        let mode = options.publish ?? (plan.manifest.publishesSnapshot ? .snapshot : .ordered)
        if mode == .ordered, SnapshotTree(root: plan.root).currentID() != nil {
            throw .usage(
                UsageError(
                    "\(plan.root) is published as snapshots (\(plan.root)/\(SnapshotTree.currentName) names one); sync it with --publish snapshot, or remove that link to publish in order again"
                ))
        }
        if mode == .snapshot, plan.isFiltered {
            throw .usage(
                UsageError(
                    "--publish snapshot publishes the whole tree at once; it cannot be used with --tag, --skip-tag or --shard"))
        }
        return mode
    }

    /// Snapshots kept: `--keep`, else the largest `keep:` of the sets, else the default.
    static func keptSnapshots(_ plan: Plan, options: SyncOptions) -> Int {
        options.keep ?? plan.manifest.snapshotKeep ?? PublishMode.defaultKeep
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
}
