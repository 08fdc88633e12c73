import Foundation

/// `sync --delete` within a run: decided before anything is fetched, carried out only
/// after a clean run (docs/deletions.md#when-sync-deletes).
extension SyncSession {
    /// What `--delete` would remove (`Deletions.find`), refused as a whole (exit 4,
    /// before anything is fetched) past `--max-delete`'s count or the root's share. A
    /// set over its share fails alone: its list is not published, so the previous one
    /// stays beside the files it names. The folders of sets published as snapshots of
    /// their own are kept in the tree and pruned inside the snapshots those sets build
    /// (`apart`). A file within its grace period stays (`keep_removed`, by `state`'s
    /// record of since when it is absent, which this completes); what is left is what
    /// the limits weigh (docs/deletions.md#grace-period).
    func planDeletions(_ plan: inout Plan, apart: [String], state: StateOpening, pool: WorkPool) async throws(SyncError)
        -> (deletions: Deletions, warning: String?)
    {
        let (now, grace) = (options.now, RemovalGrace(manifest: plan.manifest, override: options.keepRemoved))
        let (found, warning) = await pool.run { [plan, limits = options.deleteLimits] in
            let store = state.store
            let found = Deletions.find(
                in: plan, setRoots: apart, limits: limits, grace: grace, absences: store?.absences() ?? [:], now: now)
            let warning = store?.recordAbsences(found.absent, now: now, unseen: plan.manifest.distrustedFolders)
            return (found, warning)
        }
        if let refusal = found.refusal { throw .tooManyDeletions(refusal) }
        let shrunk = Set(found.shrunk.map(\.dest))
        plan.manifest.publishGroups.removeAll { shrunk.contains($0.folder) }
        return (found, warning)
    }

    /// Carries out `prune` after the run's `results`, or skips every deletion when the
    /// run was not clean. Returns a result per file and stale link, and the line for
    /// the report's warnings when the state database could not forget them.
    func delete(
        _ prune: Deletions, plan: Plan, results: ReportItems, store: StateStore?, backup: BackupFolder?, pool: WorkPool
    ) async -> (results: [ItemResult], warning: String?) {
        let listFailures = plan.manifest.listFailures.count
        if let reason = Self.uncleanRun(
            results, listFailures: listFailures, shrunkSets: prune.shrunk.count, cancelled: isCancelled)
        {
            return (prune.skipped(because: reason), nil)
        }
        return await pool.run {
            [
                root = plan.root, store, items = plan.items, kept = plan.manifest.distrustedFolders,
                deleted = options.afterDeletion
            ] in
            let deletions =
                prune.execute(root: root, backup: backup, deleted: deleted ?? { _ in })
                + Prune.removeStaleLinks(root: root, items: items, store: store, keeping: kept)
            return (deletions, store?.remove(deletions.filter { $0.status == .deleted }.map(\.dest)))
        }
    }

    /// Why a run may not delete (only a clean run proves what the tree should hold), or
    /// nil when every item and every list succeeded. A set whose list shrank past the
    /// share (`shrunkSets` of the failed rows) holds back its own files alone.
    static func uncleanRun(_ results: ReportItems, listFailures: Int, shrunkSets: Int = 0, cancelled: Bool) -> String? {
        if cancelled { return "the run was interrupted, so nothing was deleted" }
        var unclean = 0
        results.forEachOutcome { status, _, _ in
            switch status {
            case .downloaded, .unchanged, .unverified, .verified, .deleted, .deleteSkipped, .keptRemoved, .notServed: break
            case .failed, .mismatch, .interrupted, .skipped, .missing: unclean += 1
            }
        }
        unclean -= listFailures + shrunkSets
        guard unclean > 0 || listFailures > 0 else { return nil }
        var what: [String] = []
        if unclean > 0 { what.append(unclean == 1 ? "1 item" : "\(unclean) items") }
        if listFailures > 0 { what.append(listFailures == 1 ? "1 list" : "\(listFailures) lists") }
        return
            "\(what.joined(separator: " and ")) did not succeed, so the run cannot tell what the tree should hold; nothing was deleted"
    }
}
