import Foundation

/// The outputs of one run that monitoring and CI read (docs/reports.md,
/// docs/safety.md#output-files): the `--events` stream opened before the run, and where the reports
/// and the metrics go once it has ended. The command line names them; this writes them.
///
/// `@unchecked Sendable`: the events stream and what went wrong with it are used
/// only under `lock`, by `write` and by `finish`.
public final class RunOutputs: @unchecked Sendable {
    /// What an output option asks for.
    public enum Role: Sendable {
        case report, junit, metrics, events
    }

    private let targets: [(role: Role, target: OutputTarget)]
    private let events: OutputFile.Writer?
    private let eventsTarget: OutputTarget?
    /// Told, once, why the events stream stopped taking lines.
    private let problem: @Sendable (String) -> Void

    /// Why the events stream stopped taking lines (it could not be opened, its reader
    /// went away, its disk filled): later events are dropped, the run goes on, and it
    /// exits 4.
    private var eventsFailure: String?
    /// Held by every use of `events` and `eventsFailure`.
    private let lock = NSLock()

    /// Resolves each option given (`nil` paths are left out) and opens the events
    /// stream, before anything is fetched (docs/safety.md#output-files). Throws, naming the
    /// option and the path, for one no output may take or one named twice (exit 2);
    /// an events file that cannot be opened is told to `problem`, and the run goes on
    /// without it (exit 4).
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
        var stream: OutputFile.Writer?
        if let eventsTarget {
            do {
                let writer = try OutputFile.Writer(eventsTarget.kind)
                // The file is there from the start, so it can be followed as the run goes.
                try writer.commit()
                stream = writer
            } catch {
                eventsFailure = error.reason
                problem(
                    "cannot write events \(Rules.printable(eventsTarget.given)): \(error.reason); the run goes on without them")
            }
        }
        events = stream
    }

    /// Whether anyone reads sync events.
    public var wantsEvents: Bool { events != nil }

    /// The events stream failed: the run exits 4.
    public var failed: Bool { lock.withLock { eventsFailure != nil } }

    /// One line per event; each `write` is one system call, so a reader sees whole lines.
    public func write(_ event: SyncEvent) { send(EventLine.render(event)) }

    private func send(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        guard let events, eventsFailure == nil else { return }
        events.write(line + "\n")
        if let reason = events.failureReason {
            eventsFailure = reason
            problem("cannot write events: \(reason); the run goes on without them")
        }
    }

    /// Writes the reports, the metrics and `run_finished`, each with the final exit
    /// code (4 when one of them or an event could not be written), and returns that
    /// code with a line for each output that could not be written.
    public func finish(_ report: RunReport) -> OutputBatch.Outcome {
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
        // The events' last line goes first among the streams: the likeliest to fail (its
        // reader gone), so that a report on stdout already carries that failure.
        if let events, let eventsTarget, eventsFailure == nil {
            outputs.insert(.eventsEnd(events, target: eventsTarget), at: 0)
        }
        return OutputBatch(outputs).write(report)
    }
}
