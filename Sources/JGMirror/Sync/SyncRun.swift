import Foundation

/// What the steps of one `SyncSession.run` share, from its first list to its report
/// (docs/sync.md): its clock, threads, engine (one per run: its lists, signatures and
/// items share one host table, docs/hosts.md#host-states), plan, tree and state.
/// `SyncSession.begin` makes it, the steps carry it in order (`inout`), `end` lets its
/// resources go whatever way the run ended.
struct SyncRun {
    /// When the run began: the report's `started`, and `--max-duration`'s start.
    let started: Date
    /// The run's threads off the engine's: the tree, the database, hashing, syncs.
    let pool: WorkPool
    /// The run as its report names it (docs/reports.md#the-run).
    let identity: RunIdentity
    var plan: Plan
    /// The root as the manifest gives it: the state database, the lists' cache and
    /// `current` live here, while the items may move into a snapshot being built.
    let stateRoot: String
    /// `ROOT/.jgmirror/` and the tree's lock, held for the run; none for `get`.
    let folder: StateFolder?
    let backup: BackupFolder?
    let engine: TransferEngine
    /// Turns the engine's item events into the session's, once the plan is complete.
    let relay: EventRelay
    /// Stops the run at `--max-duration`, as SIGINT does.
    let stopAtDeadline: DispatchWorkItem?
    /// How the run's changes become visible, chosen once the plan is complete.
    var publications: [any Publication] = []
    /// The state database, opened beside the first steps (`StateOpening`).
    var state = StateOpening(.none())
    /// What each folder held before the run, for the walk.
    var listings = FolderListings()
    var quarantine: Quarantine?
    /// Lines for the report's warnings, in the order the steps found them.
    var warnings: [String] = []
    /// Sets whose list shrank past `--max-delete`'s share: each failed alone.
    var shrunkSets = 0
    /// What the publications left published, for the report.
    var snapshot: SnapshotOutcome?
    var setSnapshots: [SnapshotOutcome] = []

    /// Lets go of what the run holds, last taken first: the deadline's timer, the
    /// engine, the database (every write is over by then), an empty backup folder, the
    /// tree's lock, and the threads.
    func end() {
        stopAtDeadline?.cancel()
        engine.shutdown()
        state.close()
        backup?.removeIfEmpty()
        withExtendedLifetime(folder) {}
        pool.close()
    }

    /// The published snapshot each set with snapshots of its own builds, and the
    /// whole tree's when it is one.
    var prepared: [SnapshotTree.Prepared] { publications.compactMap(\.prepared) }
}

/// The engine's item events as the session's (`SyncEvent`), by the plan's items: set
/// once the plan is complete, before any item is handed to the engine. Lists and
/// signatures travel under ids no item has, and are left out.
final class EventRelay: Sendable {
    private let items = Locked<[PlannedItem]>([])
    private let continuation: AsyncStream<SyncEvent>.Continuation

    init(to continuation: AsyncStream<SyncEvent>.Continuation) { self.continuation = continuation }

    /// The plan's items, by id.
    func relay(for planned: [PlannedItem]) { items.withLock { $0 = planned } }

    /// Forwards one engine event (engine thread).
    func forward(_ event: TransferEvent) {
        switch event {
        case .started(let id, let length, let connections, let resumedFrom):
            guard let item = item(id) else { return }
            continuation.yield(
                .itemStarted(
                    ItemStart(dest: item.dest, tag: item.tag, length: length, connections: connections, resumedFrom: resumedFrom))
            )
        case .progress(let id, let thisRun, let present, let length, let connections):
            guard let item = item(id) else { return }
            continuation.yield(
                .progress(
                    ItemProgress(
                        dest: item.dest, tag: item.tag, bytesThisRun: thisRun, bytesPresent: present, expected: length,
                        connections: connections)))
        }
    }

    private func item(_ id: Int) -> PlannedItem? {
        items.withLock { $0.indices.contains(id) ? $0[id] : nil }
    }
}
