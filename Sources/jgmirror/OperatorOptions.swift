import ArgumentParser
import Foundation
import JGMirror

/// `--report`, `--junit`, `--events` and `--metrics` (SPEC §8, §10a): what monitoring
/// and CI read of a run. `plan` runs nothing, so it has none of them: its table on
/// stdout is the plan.
struct OperatorOptionGroup: ParsableArguments {
    @Option(help: "Write the JSON report there ('-' for stdout).")
    var report: String?

    @Option(help: "Also write a JUnit XML report there.")
    var junit: String?

    @Option(help: "Write Prometheus textfile metrics there at the end of the run, atomically (node_exporter's textfile collector).")
    var metrics: String?

    @Option(help: "Write JSON Lines events there as they happen ('-' for stdout).")
    var events: String?

    /// Decides where each output goes and opens the events stream, before anything
    /// is fetched (SPEC §10 "Output files"): exits 2 naming the option and the path
    /// for one no output may take; an events file that cannot be opened is said once,
    /// and the run goes on without it (exit 4).
    func outputs() throws(ArgumentParser.ExitCode) -> OperatorOutputs {
        try OperatorOutputs.open([
            ("--report", report, .report), ("--junit", junit, .junit), ("--metrics", metrics, .metrics), ("--events", events, .events),
        ])
    }
}

/// The outputs of one run: the open `--events` stream, and where the reports and the
/// metrics go once it has ended.
///
/// `@unchecked Sendable`: `write` runs only in the task that drains the session's
/// events and `finish` only after that task has ended, so the stream is never used
/// by two threads at once.
final class OperatorOutputs: @unchecked Sendable {
    /// What an output option asks for.
    enum Role {
        case report, junit, metrics, events
    }

    private let targets: [(role: Role, target: OutputTarget)]
    private let events: OutputFile.Writer?
    private let eventsTarget: OutputTarget?

    /// Why the events stream stopped taking lines (it could not be opened, its reader
    /// went away, its disk filled): later events are dropped, the run goes on, and it
    /// exits 4.
    private var eventsFailure: String?

    /// Resolves each option given (`nil` paths are left out) and opens the events
    /// stream; exits 2 for a path no output may take or one named twice.
    static func open(_ options: [(option: String, path: String?, role: Role)]) throws(ArgumentParser.ExitCode) -> OperatorOutputs {
        var targets: [(role: Role, target: OutputTarget)] = []
        do {
            for (option, path, role) in options {
                guard let path else { continue }
                targets.append((role, try OutputTarget.resolve(path, option: option)))
            }
            try OutputTarget.refuseShared(targets.map(\.target))
        } catch {
            Terminal.error(error.message)
            throw ExitCode(JGMirror.ExitCode.usage)
        }
        return OperatorOutputs(targets: targets)
    }

    private init(targets: [(role: Role, target: OutputTarget)]) {
        self.targets = targets
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
                Terminal.error("cannot write events \(Rules.printable(eventsTarget.given)): \(error.reason); the run goes on without them")
            }
        }
        events = stream
    }

    /// Whether anyone reads sync events.
    var wantsEvents: Bool { events != nil }

    /// The events stream failed: the run exits 4.
    var failed: Bool { eventsFailure != nil }

    /// One line per event; each `write` is one system call, so a reader sees whole lines.
    func write(_ event: SyncEvent) { send(EventLine.render(event)) }

    private func send(_ line: String) {
        guard let events, eventsFailure == nil else { return }
        events.write(line + "\n")
        if let reason = events.failureReason {
            eventsFailure = reason
            Terminal.error("cannot write events: \(reason); the run goes on without them")
        }
    }

    /// Writes the reports, the metrics and `run_finished`, each with the final exit
    /// code (4 when one of them or an event could not be written), says which could
    /// not be written, and returns that code.
    func finish(_ report: RunReport) -> JGMirror.ExitCode {
        var report = report
        if eventsFailure != nil { report.exitCode = JGMirror.ExitCode.combine([report.exitCode, .local]) }
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
        let outcome = OutputBatch(outputs).write(report)
        for failure in outcome.failures { Terminal.error(failure) }
        return outcome.exitCode
    }
}

/// `--ca-cert`: every command that fetches takes it, `plan` and `verify` for the lists
/// they read, `sync` and `get` with their other transfer options.
struct TrustOptionGroup: ParsableArguments {
    @Option(name: .customLong("ca-cert"), help: "Trust this CA bundle in addition to the system's.")
    var caCert: String?

    func validate() throws {
        if let caCert, !FileManager.default.isReadableFile(atPath: caCert) {
            throw ValidationError("--ca-cert: cannot read \(caCert)")
        }
    }

    /// What fetching the lists needs beyond the manifest options: the CA bundle.
    var listOptions: SyncOptions {
        var options = SyncOptions()
        options.caCert = caCert
        return options
    }
}
