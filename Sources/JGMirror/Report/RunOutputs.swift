import Foundation
import Synchronization

/// The outputs of one run that monitoring and CI read (docs/reports.md, and
/// docs/safety.md#output-files): the `--events` stream opened before the run, and
/// where the reports and the metrics go once it has ended. The command line names
/// them; this writes them.
///
/// A stream waits for its reader only as long as its `OutputPatience` allows, and
/// SIGINT or SIGTERM cut that short once `watchSignals()` was called: a reader that
/// takes nothing never keeps the run from ending, nor a signal from ending it.
///
/// `@unchecked Sendable`: the events stream and what went wrong with it are used
/// only under `lock`, by `start`, `write` and `finish`; the rest is immutable or a
/// `Mutex`.
public final class RunOutputs: @unchecked Sendable {
    /// What an output option asks for.
    public enum Role: Sendable {
        case report, junit, metrics, events
    }

    private let targets: [(role: Role, target: OutputTarget)]
    private let eventsTarget: OutputTarget?
    /// Told, once, why the events stream stopped taking lines.
    private let problem: @Sendable (String) -> Void
    /// How long each stream waits for its reader; `interrupt()`ed by a signal.
    private let patience = OutputPatience()
    /// The registration `watchSignals()` made, ended once `finish` is done.
    private let signals = Mutex<SignalWatch.Watch?>(nil)

    /// The events stream, once `start` opened it.
    private var events: OutputFile.Writer?
    /// Whether `start` has run: events are opened once.
    private var started = false
    /// Why the events stream stopped taking lines (it could not be opened, its reader
    /// went away or stopped reading, its disk filled): later events are dropped, the
    /// run goes on, and it exits 4.
    private var eventsFailure: String?
    /// Held by every use of `events`, `started` and `eventsFailure`.
    private let lock = NSLock()

    /// Resolves each option given (`nil` paths are left out), before anything is
    /// fetched (docs/safety.md#output-files). Throws, naming the option and the path,
    /// for one no output may take or one named twice (exit 2). Nothing is opened
    /// until `start`.
    public init(
        _ options: [(option: String, path: String?, role: Role)], problem: @escaping @Sendable (String) -> Void
    ) throws(OutputTarget.Refusal) {
        var targets: [(role: Role, target: OutputTarget)] = []
        for (option, path, role) in options {
            guard let path else { continue }
            targets.append((role, try OutputTarget.resolve(path, option: option)))
        }
        try OutputTarget.refuseShared(targets.map(\.target))
        self.targets = targets
        self.problem = problem
        eventsTarget = targets.first { $0.role == .events }?.target
    }

    /// Refuses an output that would replace what `guarded` names (exit 2, nothing
    /// written), then opens the events stream, before anything is fetched. An events
    /// file that cannot be opened is told to `problem`, and the run goes on without it
    /// (exit 4).
    public func start(guarding guarded: [OutputTarget.Guarded]) throws(OutputTarget.Refusal) {
        try refuse(guarded)
        lock.lock()
        defer { lock.unlock() }
        guard !started else { return }
        started = true
        guard let eventsTarget else { return }
        do {
            let writer = try OutputFile.Writer(eventsTarget.kind, patience: patience)
            // The file is there from the start, so it can be followed as the run goes.
            try writer.commit()
            events = writer
        } catch {
            eventsFailure = error.reason
            problem("cannot write events \(Rules.printable(eventsTarget.given)): \(error.reason); the run goes on without them")
        }
    }

    /// Refuses an output that would replace what `guarded` names: a run that stops
    /// before it knows its root (an invalid manifest) still keeps the manifest.
    public func refuse(_ guarded: [OutputTarget.Guarded]) throws(OutputTarget.Refusal) {
        for (_, target) in targets { try target.refuse(guarded) }
    }

    /// From now until `finish` is done, SIGINT and SIGTERM cut every wait for a reader
    /// short (`OutputPatience.graceAfterSignal`), and the outputs carry exit 130.
    public func watchSignals() {
        signals.withLock { watch in
            guard watch == nil else { return }
            watch = SignalWatch.shared.watch { [patience] _ in patience.interrupt() }
        }
    }

    /// Whether anyone reads sync events.
    public var wantsEvents: Bool { lock.withLock { events != nil } }

    /// The events stream failed: the run exits 4.
    public var failed: Bool { lock.withLock { eventsFailure != nil } }

    /// One line per event, written whole; a stream whose reader takes nothing for
    /// `OutputPatience.stallLimit` fails, and later events are dropped.
    /// Nothing is rendered when no one reads them.
    public func write(_ event: SyncEvent) { send(EventLine.render(event)) }

    private func send(_ line: @autoclosure () -> String) {
        lock.lock()
        defer { lock.unlock() }
        guard let events, eventsFailure == nil else { return }
        events.write(line() + "\n")
        if let reason = events.failureReason {
            eventsFailure = reason
            problem("cannot write events: \(reason); the run goes on without them")
        }
    }

    /// Writes the reports, the metrics and `run_finished`, each with the final exit
    /// code (4 when one of them or an event could not be written, 130 after a signal),
    /// and returns that code with a line for each output that could not be written.
    public func finish(_ report: RunReport) -> OutputBatch.Outcome {
        watchSignals()
        defer { signals.withLock { $0?.end() } }
        lock.lock()
        defer { lock.unlock() }
        var report = report
        if eventsFailure != nil { report.exitCode = ExitCode.combine([report.exitCode, .local]) }
        var outputs: [OutputBatch.Output] = []
        for (role, target) in targets {
            switch role {
            case .report: outputs.append(.report(target))
            case .junit: outputs.append(.junit(target))
            case .metrics: outputs.append(.metrics(target))
            case .events: break
            }
        }
        if let eventsTarget, eventsFailure == nil {
            // A run that stopped before it started (an invalid manifest) has only the last line.
            outputs.append(events.map { .eventsEnd($0, target: eventsTarget) } ?? .eventsEnd(eventsTarget))
        }
        return OutputBatch(outputs, patience: patience).write(report)
    }
}

extension RunOutputs {
    /// `start`, guarding what a run of `manifest` must keep: its root (`--root` when
    /// given as `rootOverride`), with the published snapshots and the state folder in
    /// it, the manifest itself and the keyrings it names.
    public func start(for manifest: Manifest, rootOverride: String?) throws(OutputTarget.Refusal) {
        let keyrings = manifest.checksums.compactMap(\.signature?.keyring) + manifest.sets.compactMap(\.keyring)
        try start(
            guarding: [
                .tree(Plan.resolveRoot(manifest: manifest, override: rootOverride)), .file(manifest.path, what: "the manifest"),
            ]
                + keyrings.map { .file($0, what: "the keyring \($0)") })
    }
}
