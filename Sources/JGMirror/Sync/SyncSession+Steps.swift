import Foundation

/// The steps of a run, in the order `run` takes them (docs/sync.md).
extension SyncSession {
    /// Starts the run: its clock (the report covers everything from here), threads,
    /// root, the tree's lock, the backup folder, and the one engine every list,
    /// signature and item of the run goes through.
    func begin() async throws(SyncError) -> SyncRun {
        let started = Date()
        // Steps that can block for long (the tree, the database, syncs) run on the
        // run's own threads, never on Swift's shared ones.
        let pool = WorkPool(computingThreads: options.hashThreads)
        let identity = await pool.run { [plan] in Self.identity(of: plan) }
        if options.delete, plan.isFiltered { throw .usage(.deleteUnderFilter) }
        do {
            try FileManager.default.createDirectory(atPath: plan.root, withIntermediateDirectories: true)
        } catch {
            throw .local("cannot create root \(plan.root): \(error.localizedDescription)")
        }
        let folder = usesState ? try StateFolder(root: plan.root, shard: plan.shard) : nil
        // Made before anything else changes the tree: a backup folder that cannot be
        // (the root, inside it, another file system) stops the run untouched.
        let backup = try options.backupDir.map { directory throws(SyncError) in
            try BackupFolder(directory: directory, root: plan.root, started: started)
        }
        let relay = EventRelay(to: continuation)
        let engine: TransferEngine
        do {
            var configuration = options.engineConfiguration
            configuration.apply(plan.manifest.hosts, origins: plan.manifest.originHosts)
            // With nobody listening, an item's start and progress are not turned into events.
            var forward: @Sendable (TransferEvent) -> Void = { _ in }
            if options.emitsEvents { forward = { event in relay.forward(event) } }
            engine = try TransferEngine(configuration: configuration, onEvent: forward)
        } catch {
            backup?.removeIfEmpty()
            throw .local(error.message)
        }
        // At the deadline the run stops as on SIGINT: resume state kept, report written.
        let stopAtDeadline = engine.configuration.runDeadline.map { run in
            run.deadline.schedule(at: run.at) { [self] in cancel() }
        }
        if let clearing = control.withLock({ control -> Bool? in
            control.engine = engine
            return control.cancel
        }) {
            engine.cancel(clearing: clearing)
        }
        return SyncRun(
            started: started, pool: pool, identity: identity, plan: plan, stateRoot: plan.root, folder: folder, backup: backup,
            engine: engine, relay: relay, stopAtDeadline: stopAtDeadline)
    }

    /// Reads the lists of the manifest's `sets:` on the run's engine, keeping each in
    /// the tree's cache, and completes the plan with their items (docs/manifest.md#sets);
    /// then refuses a tag filter that selects nothing, now that every item is known.
    func readSets(_ run: inout SyncRun) async throws(SyncError) {
        if run.plan.awaitsSets {
            let fetcher = try listFetcher(run)
            defer { run.warnings += fetcher.warnings.value }
            let served = SnapshotTree.publishedTree(root: run.stateRoot) ?? run.stateRoot
            try await run.plan.expandSets(with: fetcher, served: served, now: options.now)
            run.warnings += run.plan.manifest.warnings.map { $0.errorDescription ?? $0.message }
        }
        if let problem = run.plan.emptySelection { throw .usage(problem) }
        run.relay.relay(for: run.plan.items)
    }

    /// A fetcher for the run's lists, on its engine, caching them under the root.
    private func listFetcher(_ run: SyncRun) throws(SyncError) -> ListFetcher {
        var cache = ListCache(root: run.stateRoot, readOnly: !usesState)
        cache.redact = run.plan.manifest.defaults.redact ?? []
        cache.durable = options.durable
        return try ListFetcher(engine: run.engine, cache: cache)
    }

    /// Chooses how the run publishes and makes ready where it builds: in place, the
    /// whole tree's snapshot, or each set's own (docs/publishing.md).
    func preparePublishing(_ run: inout SyncRun) async throws(SyncError) {
        var publications = try Publications.choose(for: run.plan, options: options, usesState: usesState)
        for index in publications.indices {
            try await publications[index].prepare(&run.plan, options: options, pool: run.pool)
        }
        run.publications = publications
    }

    /// Starts opening the state database (on a thread of the pool, while the tree is
    /// looked at and the first items go, `StateOpening`), checks that no destination
    /// leads out of the root through what is on disk, and opens the root.
    func openTree(_ run: inout SyncRun) async throws(SyncError) -> RootDirectory {
        if let path = run.folder?.path {
            let (timeout, before, window) = (options.stateBusyTimeout, options.beforeStateOpens, options.quickCheck.racyWindowNs)
            let prepared = run.prepared
            run.state = StateOpening(on: run.pool) {
                before?()
                return Self.openState(folder: path, busyTimeout: timeout, snapshots: prepared, racyWindowNs: window)
            }
        }
        do { run.listings = try RootConfinement.check(run.plan) } catch { throw .manifest(error) }
        let root: RootDirectory
        do { root = try RootDirectory(path: run.plan.root) } catch { throw .local(error.message) }
        // Rejected bytes are kept in the state folder, and an older version's beside
        // their destination are moved there (docs/safety.md#quarantine).
        let quarantine = run.folder.flatMap { try? Quarantine(stateFolder: $0.path) }
        run.quarantine = quarantine
        run.warnings += await run.pool.run { [items = run.plan.items, listings = run.listings] in
            quarantine?.adoptLegacyFiles(of: items, listings: listings, root: root) ?? []
        }
        return root
    }

    /// What `--delete` would remove, decided before anything is fetched
    /// (docs/deletions.md#when-sync-deletes); nil without `--delete`.
    func findDeletions(_ run: inout SyncRun) async throws(SyncError) -> Deletions? {
        guard options.delete else { return nil }
        if run.plan.items.isEmpty, run.plan.manifest.listFailures.isEmpty { throw .usage(.deleteEverything) }
        let (deletions, warning) = try await planDeletions(
            &run.plan, apart: run.publications.compactMap(\.prunedApart), state: run.state, pool: run.pool)
        if let warning { run.warnings.append(warning) }
        return deletions
    }

    /// Gives the items the hashes of the manifest's `checksums:` lists, read on the
    /// run's engine and kept in the tree's cache (`Plan.applyChecksumLists`).
    func applyChecksumLists(_ run: inout SyncRun) async throws(SyncError) {
        if !run.plan.manifest.checksums.isEmpty {
            let fetcher = try listFetcher(run)
            defer { run.warnings += fetcher.warnings.value }
            try await run.plan.applyChecksumLists(with: fetcher)
        }
        if options.requireChecksums { try run.plan.requireChecksums() }
    }

    /// Takes every item to its end (`ItemRunner`): files, then the sets' lists, then
    /// links, each placed after the ones it names. The lists that failed and the sets
    /// whose list shrank are rows of their own.
    func fetchAndPlace(_ run: inout SyncRun, root: RootDirectory) async -> ReportItems {
        let plan = run.plan
        let runner = ItemRunner(
            items: plan.items, options: options, engine: run.engine, events: continuation, root: root, pool: run.pool,
            state: run.state, listings: run.listings, backup: run.backup, quarantine: run.quarantine,
            publishing: plan.manifest.publishGroups, snapshotSetFolders: Set(plan.manifest.snapshotSets.map(\.scope)))
        var results = await runner.run()
        run.warnings += runner.warnings.value
        let listFailures = plan.manifest.listFailures.map(\.result)
        for result in listFailures { continuation.yield(.itemFinished(result)) }
        results.extra += listFailures
        return results
    }
}
