import Foundation

/// The last steps of a run: deletions, publishing, the report (docs/sync.md).
extension SyncSession {
    /// Carries out `--delete` after a clean run, or says why nothing was deleted; a set
    /// whose list shrank past the share fails alone, before the deletions.
    func delete(_ deletions: Deletions?, in run: inout SyncRun, results: inout ReportItems) async {
        guard let deletions else { return }
        for result in deletions.shrunk { continuation.yield(.itemFinished(result)) }
        results.extra += deletions.shrunk
        run.shrunkSets = deletions.shrunk.count
        let store = await run.pool.run { [state = run.state] in state.store }
        let (removed, failure) = await delete(
            deletions, plan: run.plan, results: results, store: store, backup: run.backup, pool: run.pool)
        if let failure { run.warnings.append(failure) }
        let kept = deletions.keptResults()
        for result in removed + kept { continuation.yield(.itemFinished(result)) }
        results.extra += removed + kept
    }

    /// Makes what the run placed visible, each publication in turn: the sets' own
    /// snapshots, then the whole tree's.
    func publish(_ run: inout SyncRun, results: inout ReportItems) async throws(SyncError) {
        let store = await run.pool.run { [state = run.state] in state.store }
        let ending = RunEnding(
            results: results, cancelled: isCancelled,
            unclean: Self.uncleanRun(
                results, listFailures: run.plan.manifest.listFailures.count, shrunkSets: run.shrunkSets, cancelled: isCancelled),
            store: store, options: options, started: run.started, pool: run.pool, files: run.plan.items.count)
        for publication in run.publications {
            let outcome = try await publication.finish(ending)
            for result in outcome.failed { continuation.yield(.itemFinished(result)) }
            results.extra += outcome.failed
            run.warnings += outcome.warnings
            if let snapshot = outcome.snapshot { run.snapshot = snapshot }
            if let snapshot = outcome.setSnapshot { run.setSnapshots.append(snapshot) }
        }
    }

    /// The report of the run, once the state database has every write.
    func report(_ run: inout SyncRun, results: ReportItems) async -> RunReport {
        let (store, openWarnings) = await run.pool.run { [state = run.state] in (state.store, state.warnings) }
        if let store { await run.pool.run { store.close() } }
        var report = RunReport(
            command: command, manifest: run.plan.manifest.path, started: run.started, finished: Date(), items: results)
        report.run = run.identity
        report.warnings = run.plan.manifest.listWarnings + openWarnings + run.warnings
        report.hosts = Self.hostSummaries(run.engine.hostSnapshot())
        report.snapshot = run.snapshot
        report.setSnapshots = run.setSnapshots
        return report
    }

    /// Opens the state database and reads its records; without a usable one, says
    /// why and the run hashes every present file.
    static func openState(
        folder: String, busyTimeout: Double, snapshots: [SnapshotTree.Prepared], racyWindowNs: Int64
    ) -> StateOpening.Opened {
        let opening = StateStore.open(folder: folder, busyTimeout: busyTimeout)
        var warnings = opening.warning.map { [$0] } ?? []
        warnings += snapshots.compactMap(\.warning)
        guard let opened = opening.store else { return .none(warnings: warnings) }
        for snapshot in snapshots {
            if let failure = opened.refresh(
                linked: snapshot.linked, pruned: snapshot.pruned, scope: snapshot.scope, racyWindowNs: racyWindowNs)
            {
                warnings.append(failure)
            }
        }
        do {
            return StateOpening.Opened(store: opened, records: try opened.recordTable(), warnings: warnings)
        } catch {
            warnings.append(
                "cannot read state database \(opened.path) (\(error)); not using it this run (every present file is hashed)")
            return .none(warnings: warnings)
        }
    }
}
