import Foundation

/// Snapshot publishing within a sync (`SnapshotTree`, docs/publishing.md#snapshot).
extension SyncSession {
    /// How the run of `plan` publishes: `options.publish`, else a snapshot when a set
    /// asks for one. A run that would publish in order into a tree that holds
    /// snapshots is refused: it would change files a published snapshot shares.
    /// A set below the root with `publish: snapshot` publishes its own folder
    /// (`prepareSetSnapshots`), not the run.
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

    /// Builds (or resumes) the snapshot under construction and moves the plan into it.
    static func prepareSnapshot(
        _ plan: inout Plan, options: SyncOptions, pool: WorkPool
    ) async throws(SyncError) -> SnapshotTree.Prepared {
        let tree = SnapshotTree(root: plan.root)
        let prepared = try await tree.prepare(keep: keptSnapshots(plan, options: options), options: options, on: pool)
        plan.move(to: tree.building)
        return prepared
    }

    /// Publishes the snapshot a clean run built; throws when it cannot be published.
    /// A run that changed nothing (`changed` false) publishes nothing and retires
    /// nothing: `next` stays, marked a copy of the current snapshot. An unclean run
    /// leaves `current` where it was, and marks a `next` that ran out of space
    /// (`ranOutOfSpace`) for the next run to remove (docs/publishing.md#snapshot).
    /// Returns what the report says of it, and a line for the report's warnings: why
    /// an unclean run left `current` where it was, or a failed database write.
    static func finishSnapshot(
        root: String, unclean: String?, changed: Bool, ranOutOfSpace: Bool, keep: Int, files: Int, store: StateStore?,
        options: SyncOptions, started: Date, pool: WorkPool
    ) async throws(SyncError) -> (SnapshotOutcome, warning: String?) {
        let tree = SnapshotTree(root: root)
        if let unclean {
            let id = tree.currentID()
            let current = id.map { "\(SnapshotTree.currentName) still names \($0)" } ?? "nothing is published yet"
            let reason = unclean.replacingOccurrences(of: "; nothing was deleted", with: "")
                .replacingOccurrences(of: ", so nothing was deleted", with: "")
            if ranOutOfSpace { await pool.run { SnapshotTree.mark(tree.fullMark, with: "") } }
            return (
                SnapshotOutcome(current: id, published: false),
                "snapshot not published (\(reason)): \(current); \(tree.leftFor(ranOutOfSpace: ranOutOfSpace))"
            )
        }
        if !changed, let id = tree.currentID() {
            let warning = await pool.run { tree.leaveUnchanged(store: store) }
            return (SnapshotOutcome(current: id, published: false, unchanged: true), warning)
        }
        let (id, warning) = try await tree.publish(
            files: files, keep: keep, store: store, options: options, started: started, on: pool)
        return (SnapshotOutcome(current: id, published: true), warning)
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
        var last: (old: PlannedItemOptions, new: PlannedItemOptions)?
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
