import Foundation

/// Runs a plan: fetches what is missing or stale, verifies, places, and returns the
/// report model (SPEC §4). The library's main entry point; the CLI is a thin layer
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
    private let continuation: AsyncStream<SyncEvent>.Continuation
    private let plan: Plan
    private let options: SyncOptions
    private let command: String
    private let takesLock: Bool
    /// Re-fetch a present file that has no checksum (one-off downloads do).
    private let refetchUnverified: Bool
    private let control = Locked<Control>(Control())

    private struct Control {
        var engine: TransferEngine?
        /// Set by `cancel`: whether to clear state.
        var cancel: Bool?
    }

    /// A sync of `plan` under `options`.
    public convenience init(plan: Plan, options: SyncOptions = SyncOptions()) {
        self.init(plan: plan, options: options, command: "sync", takesLock: true, refetchUnverified: false)
    }

    init(plan: Plan, options: SyncOptions, command: String, takesLock: Bool, refetchUnverified: Bool) {
        self.plan = plan
        self.options = options
        self.command = command
        self.takesLock = takesLock
        self.refetchUnverified = refetchUnverified
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

    /// Runs the plan to the end (or to a cancel) and returns the report.
    ///
    /// Throws only for what stops a run as a whole: the root's lock is held, the root
    /// cannot be made, a destination escapes through a symlink, or a checksums file
    /// is unreachable or contradicts the manifest. Item failures are in the report.
    public func run() async throws(SyncError) -> RunReport {
        defer { continuation.finish() }
        let started = Date()
        var plan = self.plan
        do {
            try FileManager.default.createDirectory(atPath: plan.root, withIntermediateDirectories: true)
        } catch {
            throw .local("cannot create root \(plan.root): \(error.localizedDescription)")
        }
        let lock = takesLock ? try RootLock(root: plan.root) : nil
        defer { withExtendedLifetime(lock) {} }
        do { try RootConfinement.check(plan) } catch { throw .manifest(error) }

        let items = plan.items
        let continuation = self.continuation
        let engine: TransferEngine
        do {
            engine = try TransferEngine(configuration: options.engineConfiguration) { event in
                SyncSession.forward(event, items: items, to: continuation)
            }
        } catch {
            throw .local(error.message)
        }
        defer { engine.shutdown() }
        if let clearing = control.withLock({ control -> Bool? in
            control.engine = engine
            return control.cancel
        }) {
            engine.cancel(clearing: clearing)
        }

        if !plan.manifest.checksums.isEmpty {
            try await applyChecksumFiles(to: &plan, engine: engine)
        }
        if options.requireChecksums, let item = plan.items.first(where: { $0.sha256 == nil }) {
            throw .manifest(
                ManifestError(
                    file: plan.manifest.path, location: item.location,
                    message: "item '\(item.dest)' has no checksum (inline or from a checksums file) and --require-checksums is set"))
        }
        let run = ItemRunner(
            items: plan.items, options: options, engine: engine, events: continuation, refetchUnverified: refetchUnverified)
        let results = await run.run()
        return RunReport(command: command, manifest: plan.manifest.path, started: started, finished: Date(), items: results)
    }

    private static func forward(_ event: TransferEvent, items: [PlannedItem], to continuation: AsyncStream<SyncEvent>.Continuation) {
        // Checksums files travel under id -1 and are not items.
        switch event {
        case .started(let id, _, _, _) where !items.indices.contains(id): return
        case .progress(let id, _, _, _, _) where !items.indices.contains(id): return
        default: break
        }
        switch event {
        case .started(let id, let length, let connections, let resumedFrom):
            let item = items[id]
            continuation.yield(
                .itemStarted(
                    ItemStart(dest: item.dest, tag: item.tag, length: length, connections: connections, resumedFrom: resumedFrom)))
        case .progress(let id, let thisRun, let present, let length, let connections):
            let item = items[id]
            continuation.yield(
                .progress(
                    ItemProgress(
                        dest: item.dest, tag: item.tag, bytesThisRun: thisRun, bytesPresent: present, expected: length,
                        connections: connections)))
        }
    }

    /// Fetches each checksums file once, through the same engine, and applies it.
    private func applyChecksumFiles(to plan: inout Plan, engine: TransferEngine) async throws(SyncError) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-sums-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw .local("cannot create \(folder): \(error.localizedDescription)")
        }
        var sums: [(source: ChecksumSource, hashes: [String: String])] = []
        for (index, source) in plan.manifest.checksums.enumerated() {
            let path = "\(folder)/sums-\(index)"
            let request = TransferRequest(
                id: -1, sources: [source.url], partPath: path, statePath: path + ".jgd", expectedSize: nil, connections: 1,
                retries: 2, minSegment: 1 << 20, timeout: 30, headers: plan.items.first?.headers.map { "\($0.name): \($0.value)" } ?? [],
                insecure: false, resume: false, observer: nil, sizeLimit: 64 << 20)
            let outcome = await withCheckedContinuation { done in engine.submit(request) { done.resume(returning: $0) } }
            switch outcome.status {
            case .completed: break
            case .failed(let error): throw .checksums(url: source.url, error: error)
            case .cancelled, .skipped:
                throw .checksums(url: source.url, error: TransferError(code: "interrupted", message: "interrupted"))
            }
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            sums.append((source, ChecksumFiles.parse(text, baseURL: source.url)))
        }
        do { try ChecksumFiles.apply(sums, to: &plan) } catch { throw .manifest(error) }
    }
}
