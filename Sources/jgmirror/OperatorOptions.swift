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

    /// Opens the events file (stdout for `-`); exits 4 naming the file when it cannot.
    func outputs() -> OperatorOutputs {
        var sink: FileHandle?
        if let events {
            if events == "-" {
                if report == "-" {
                    Terminal.error("--events - and --report - cannot share stdout; write one of them to a file")
                    Foundation.exit(JGMirror.ExitCode.usage.rawValue)
                }
                sink = .standardOutput
            } else {
                guard FileManager.default.createFile(atPath: events, contents: nil),
                    let handle = FileHandle(forWritingAtPath: events)
                else {
                    Terminal.error("cannot write events \(events): \(String(cString: strerror(errno)))")
                    Foundation.exit(JGMirror.ExitCode.local.rawValue)
                }
                sink = handle
            }
        }
        return OperatorOutputs(events: sink, metricsPath: metrics, reportPath: report, junitPath: junit)
    }
}

/// The open `--events` stream and the `--metrics`, `--report` and `--junit` paths of one run.
///
/// `@unchecked Sendable`: `write` runs only in the task that drains the session's
/// events and `finish` only after that task has ended, so the handle is never used
/// by two threads at once.
final class OperatorOutputs: @unchecked Sendable {
    private let events: FileHandle?
    private let metricsPath: String?
    let reportPath: String?
    let junitPath: String?

    init(events: FileHandle?, metricsPath: String?, reportPath: String? = nil, junitPath: String? = nil) {
        self.events = events
        self.metricsPath = metricsPath
        self.reportPath = reportPath
        self.junitPath = junitPath
    }

    /// Whether anyone reads sync events.
    var wantsEvents: Bool { events != nil }

    /// Why the events stream stopped taking lines (its reader went away, its disk
    /// filled): later events are dropped, the run goes on, and it exits 4.
    private var eventsFailure: String?

    /// The events stream failed: the run exits 4.
    var failed: Bool { eventsFailure != nil }

    /// One line per event; each `write` is one system call, so a reader sees whole lines.
    func write(_ event: SyncEvent) { send(EventLine.render(event)) }

    private func send(_ line: String) {
        guard let events, eventsFailure == nil else { return }
        do { try events.write(contentsOf: Data((line + "\n").utf8)) } catch {
            let reason = Terminal.reason(error)
            eventsFailure = reason
            Terminal.error("cannot write events: \(reason); the run goes on without them")
        }
    }

    /// Writes the metrics, then `run_finished` with the final exit code (4 when the
    /// metrics or an event could not be written), and returns that code.
    func finish(_ report: RunReport) -> JGMirror.ExitCode {
        var report = report
        if eventsFailure != nil { report.exitCode = JGMirror.ExitCode.combine([report.exitCode, .local]) }
        if let metricsPath {
            do {
                try RunMetrics.write(RunMetrics.render(report), to: metricsPath)
            } catch {
                Terminal.error(error.localizedDescription)
                report.exitCode = JGMirror.ExitCode.combine([report.exitCode, .local])
            }
        }
        send(EventLine.runFinished(report))
        if eventsFailure != nil { report.exitCode = JGMirror.ExitCode.combine([report.exitCode, .local]) }
        return report.exitCode
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
