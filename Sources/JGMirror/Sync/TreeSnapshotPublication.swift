import Foundation

/// The whole tree as one snapshot (`--publish snapshot`, or a set at the root with
/// `publish: snapshot`; docs/publishing.md#snapshot): the run builds `next` beside
/// the snapshot readers see, then swaps `current` to it.
struct TreeSnapshotPublication: Publication {
    let tree: SnapshotTree
    /// Published snapshots kept.
    let keep: Int
    private(set) var prepared: SnapshotTree.Prepared?

    init(root: String, keep: Int) {
        tree = SnapshotTree(root: root)
        self.keep = keep
    }

    var prunedApart: String? { nil }

    /// Builds (or resumes) the snapshot under construction and moves the plan into it.
    mutating func prepare(_ plan: inout Plan, options: SyncOptions, pool: WorkPool) async throws(SyncError) {
        prepared = try await tree.prepare(keep: keep, options: options, on: pool)
        plan.move(to: tree.building)
    }

    /// Publishes the snapshot a clean run built; throws when it cannot be published.
    /// A run that changed nothing publishes nothing and retires nothing: `next` stays,
    /// marked a copy of the current snapshot. An unclean run leaves `current` where it
    /// was, and marks a `next` that ran out of space for the next run to remove.
    func finish(_ ending: RunEnding) async throws(SyncError) -> PublicationOutcome {
        let (tree, pool) = (tree, ending.pool)
        if let unclean = ending.unclean {
            let id = tree.currentID()
            let current = id.map { "\(SnapshotTree.currentName) still names \($0)" } ?? "nothing is published yet"
            let reason = unclean.replacingOccurrences(of: "; nothing was deleted", with: "")
                .replacingOccurrences(of: ", so nothing was deleted", with: "")
            let ranOutOfSpace = ending.results.contains(failure: .diskFull)
            if ranOutOfSpace { await pool.run { SnapshotTree.mark(tree.fullMark, with: "") } }
            let line = "snapshot not published (\(reason)): \(current); \(tree.leftFor(ranOutOfSpace: ranOutOfSpace))"
            return PublicationOutcome(snapshot: SnapshotOutcome(current: id, published: false), warnings: [line])
        }
        let changed = prepared?.differs == true || ending.results.changeTree
        if !changed, let id = tree.currentID() {
            let warning = await pool.run { [store = ending.store] in tree.leaveUnchanged(store: store) }
            return PublicationOutcome(
                snapshot: SnapshotOutcome(current: id, published: false, unchanged: true), warnings: warning.map { [$0] } ?? [])
        }
        let (id, warning) = try await tree.publish(
            files: ending.files, keep: keep, store: ending.store, options: ending.options, started: ending.started, on: pool)
        return PublicationOutcome(snapshot: SnapshotOutcome(current: id, published: true), warnings: warning.map { [$0] } ?? [])
    }
}

extension SnapshotTree {
    /// `prepare`, on a blocking job of `pool`.
    func prepare(keep: Int, options: SyncOptions, on pool: WorkPool) async throws(SyncError) -> Prepared {
        let step = options.snapshotStep ?? { _ in }
        return try await pool.run { () -> Result<Prepared, SyncError> in
            do throws(SyncError) { return .success(try prepare(keep: keep, pool: pool, step: step)) } catch {
                return .failure(error)
            }
        }.get()
    }

    /// `publish`, on a job of `pool`, then recorded in `store` with its `files`; then
    /// the snapshots past `keep` are retired (`retireAfterPublishing`) and the records
    /// of the files that moves brought up to date. Returns the new snapshot's id, and
    /// a line for the report's warnings when the database could not record it.
    func publish(
        files: Int, keep: Int, store: StateStore?, options: SyncOptions, started: Date, on pool: WorkPool
    ) async throws(SyncError) -> (id: String, warning: String?) {
        let step = options.snapshotStep ?? { _ in }
        let racyWindowNs = options.quickCheck.racyWindowNs
        return try await pool.run { () -> Result<(id: String, warning: String?), SyncError> in
            let id: String
            do throws(SyncError) { id = try publish(durable: options.durable, started: started, step: step) } catch {
                return .failure(error)
            }
            var warnings = [store?.savePublished(id, files: files, present: ids(), scope: scope)]
            let retired = retireAfterPublishing(keep: keep, step: step)
            warnings += [retired.warning]
            warnings += [store?.refresh(linked: retired.linked, pruned: retired.pruned, scope: scope, racyWindowNs: racyWindowNs)]
            let lines = warnings.compactMap { $0 }
            return .success((id, lines.isEmpty ? nil : lines.joined(separator: "; ")))
        }.get()
    }

    /// After a clean run that changed nothing: `next` is marked a copy of the current
    /// snapshot, and the database forgets the snapshots no longer on disk. Returns a
    /// line for the report's warnings when the database could not.
    func leaveUnchanged(store: StateStore?) -> String? {
        if let id = currentID() { Self.mark(unchangedMark, with: id) }
        return store?.keepSnapshots(ids(), scope: scope)
    }

    /// What the warning of an unclean run says becomes of `next`.
    func leftFor(ranOutOfSpace: Bool) -> String {
        guard ranOutOfSpace else { return "the next run resumes \(building)" }
        return "\(building) ran out of space: the next run removes it and the snapshots past --keep, then builds afresh"
    }
}

extension Plan {
    /// Moves the plan's items under `root` (a snapshot folder), each keeping its
    /// options shared with the items it shared them with.
    mutating func move(to root: String) {
        self.root = root
        var last: (old: ItemOptions, new: ItemOptions)?
        for index in items.indices { items[index].move(to: root, after: &last) }
    }

    /// The plan as `verify` and `plan` read the tree: under the snapshot `current`
    /// names when the root is published as snapshots, else as it is.
    /// The files of a set published as snapshots of its own are read in the snapshot
    /// its folder's link names.
    public func publishedTree() -> Plan {
        var moved = self
        if let tree = SnapshotTree.publishedTree(root: root) {
            moved.move(to: tree)
            return moved
        }
        for set in manifest.snapshotSets {
            if let published = SnapshotTree(root: root, set: set).published { moved.move(itemsIn: set.folder, to: published) }
        }
        return moved
    }

    /// The published snapshot of each set published as snapshots of its own, where
    /// `publishedTree` reads its files: what `plan --delete` hands `Deletions.find`.
    /// Asked of the plan as loaded, not of `publishedTree`'s.
    public var publishedSetRoots: [String] {
        manifest.snapshotSets.compactMap { SnapshotTree(root: root, set: $0).published }
    }
}
