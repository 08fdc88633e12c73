import Foundation

/// Runs a plan: fetches what is missing or stale, verifies, places, and returns the
/// report model (docs/sync.md). The library's main entry point; the CLI is a thin layer
/// over it.
///
/// ```swift
/// let manifest = try Manifest.load(path: "mirror.yaml")
/// let session = SyncSession(plan: Plan(manifest: manifest))
/// Task { for await event in session.events { print(event) } }
/// let report = try await session.run()
/// ```
public final class SyncSession: Sendable {
    /// Item events in order: started, progress…, finished. Ends when `run` returns, or
    /// at once when `SyncOptions.emitsEvents` is off.
    public let events: AsyncStream<SyncEvent>
    let continuation: AsyncStream<SyncEvent>.Continuation
    let plan: Plan
    let options: SyncOptions
    let command: RunCommand
    /// Hold `ROOT/.jgmirror/` (locks and state database); one-off downloads do not.
    let usesState: Bool
    let control = Locked<Control>(Control())

    struct Control {
        var engine: TransferEngine?
        /// Set by `cancel`: whether to clear state.
        var cancel: Bool?
    }

    /// A sync of `plan` under `options`.
    public convenience init(plan: Plan, options: SyncOptions = SyncOptions()) {
        self.init(plan: plan, options: options, command: .sync, usesState: true)
    }

    init(plan: Plan, options: SyncOptions, command: RunCommand, usesState: Bool) {
        self.plan = plan
        deadline = options.maxDuration == nil ? nil : options.runDeadline
        self.options = options
        self.command = command
        self.usesState = usesState
        (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .unbounded)
        if !options.emitsEvents { continuation.finish() }
    }

    /// Stops every transfer. Resume state is kept (the next run continues) unless
    /// `clearingState`, which deletes part files and state (JGDownloadOperation's
    /// cancel vs cancelAndClearFiles). Safe from any thread, at any time.
    public func cancel(clearingState: Bool = false) {
        let engine = control.withLock { control -> TransferEngine? in
            control.cancel = clearingState || (control.cancel ?? false)
            return control.engine
        }
        engine?.cancel(clearing: clearingState)
    }

    /// Whether `cancel` was called.
    public var isCancelled: Bool { control.withLock { $0.cancel != nil } }

    /// Whether the run was stopped at its `--max-duration` rather than by a signal or
    /// a caller's cancel.
    public var reachedDeadline: Bool { deadline?.reached ?? false }
    private let deadline: RunDeadline?

    /// Runs the plan to the end (or to a cancel) and returns the report: its steps, in
    /// order, over one `SyncRun` (docs/sync.md). A manifest's `sets:` are read here, on
    /// the run's engine, when the plan has not read them yet.
    ///
    /// Throws only for what stops a run as a whole: another run holds the tree, the
    /// root cannot be made, a destination escapes through a symlink, `--delete` would
    /// remove more than `--max-delete` or everything, `--backup-dir` is unusable, a tag
    /// filter selects nothing, or a checksums list contradicts the manifest. Item and
    /// list failures are in the report; a run with any of them deletes nothing
    /// (`delete_skipped`).
    public func run() async throws(SyncError) -> RunReport {
        defer {
            continuation.finish()
            deadline?.endRun()
        }
        var run = try await begin()
        defer { run.end() }
        try await readSets(&run)
        try await preparePublishing(&run)
        let root = try await openTree(&run)
        let deletions = try await findDeletions(&run)
        try await applyChecksumLists(&run)
        var results = await fetchAndPlace(&run, root: root)
        await delete(deletions, in: &run, results: &results)
        try await publish(&run, results: &results)
        return await report(&run, results: results)
    }

    /// The run's identity for its report (docs/reports.md#the-run): the digest is of the manifest
    /// file's bytes as they are when the run starts, before any filter, so shards of
    /// one manifest agree and an edit between shards shows.
    static func identity(of plan: Plan) -> RunIdentity {
        let bytes = FileManager.default.contents(atPath: plan.manifest.path).map { [UInt8]($0) }
        return RunIdentity(
            manifestSHA256: bytes.flatMap { SHA256.hex(of: $0) }, tags: plan.tags, skipTags: plan.skipTags, shard: plan.shard,
            host: RunIdentity.localHost)
    }

    /// The report's `hosts` section from the engine's host table, by origin.
    static func hostSummaries(_ snapshot: (table: HostTable, now: Double)) -> [HostSummary] {
        snapshot.table.hosts.sorted { $0.key < $1.key }.map { origin, host in
            HostSummary(
                origin: origin, requests: host.requests, bytes: host.bytes, bytesReceived: host.bytesReceived,
                failures: host.failures,
                throttled: host.throttles, coolingS: snapshot.table.coolingTime(of: origin, now: snapshot.now),
                state: snapshot.table.state(of: origin, now: snapshot.now).rawValue)
        }
    }

}
