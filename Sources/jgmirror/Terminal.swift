import Foundation
import JGMirror

/// stderr for people, stdout only for what was asked for (SPEC §2).
enum Terminal {
    static func error(_ message: String) { say("jgmirror: \(message)\n") }

    /// Something allowed but likely wrong; the run goes on.
    static func warning(_ message: String) { say("jgmirror: warning: \(message)\n") }

    static func info(_ message: String) { say("\(message)\n") }

    /// Writes to stderr; a closed or full stderr loses the line, not the run.
    private static func say(_ text: String) { try? FileHandle.standardError.write(contentsOf: Data(text.utf8)) }

    /// Writes what was asked for to stdout (`plan`'s table). A reader that went away
    /// (`plan | head`) ends the process as SIGPIPE would have; any other failure says
    /// why and exits 4.
    static func out(_ text: String) {
        do { try FileHandle.standardOutput.write(contentsOf: Data(text.utf8)) } catch {
            if posixCode(error) == EPIPE {
                signal(SIGPIPE, SIG_DFL)
                raise(SIGPIPE)
            }
            Terminal.error("cannot write to stdout: \(reason(error))")
            exit(JGMirror.ExitCode.local.rawValue)
        }
    }

    /// The `errno` under a Foundation file error, when there is one.
    private static func posixCode(_ error: Error) -> Int32? {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        guard let underlying, underlying.domain == NSPOSIXErrorDomain else { return nil }
        return Int32(underlying.code)
    }

    /// Why a file could not be read or written, without Foundation's wrapping.
    static func reason(_ error: Error) -> String {
        posixCode(error).map { String(cString: strerror($0)) } ?? error.localizedDescription
    }

    /// Writes the JSON and JUnit reports where asked, then exits with the report's code.
    /// The summary line starts with `label` (default: the report's command).
    static func finish(
        _ report: RunReport, reportPath: String?, junitPath: String?, quiet: Bool, label: String? = nil, summary: Bool = true,
        outputs: OperatorOutputs? = nil
    ) -> Never {
        // An events stream that failed during the run is in the report's exit code too.
        var code = JGMirror.ExitCode.combine([report.exitCode] + (outputs?.failed == true ? [.local] : []))
        var report = report
        report.exitCode = code
        for warning in report.warnings { error(warning) }
        if let reportPath, let problem = write(report, to: reportPath) {
            Terminal.error("cannot write report \(reportPath): \(problem)")
            code = JGMirror.ExitCode.combine([code, .local])
        }
        if let junitPath, let problem = writeFile(junitPath, { JUnitReport.write(report, to: $0) }) {
            Terminal.error("cannot write JUnit report \(junitPath): \(problem)")
            code = JGMirror.ExitCode.combine([code, .local])
        }
        // From here on the exit code includes the reports that could not be written.
        report.exitCode = code
        if let outputs { report.exitCode = outputs.finish(report) }
        if summary, !quiet || report.exitCode != .success { info(ProgressRenderer.summary(report, label: label)) }
        Foundation.exit(report.exitCode.rawValue)
    }

    /// Writes the JSON report to `path` (stdout for `-`) piece by piece. Returns why it
    /// could not be written.
    private static func write(_ report: RunReport, to path: String) -> String? {
        let document: ((String) -> Void) -> Void = { write in
            report.writeJSON(write)
            write("\n")
        }
        guard path == "-" else { return writeFile(path, document) }
        var failure: String?
        document { text in
            guard failure == nil else { return }
            do { try FileHandle.standardOutput.write(contentsOf: Data(text.utf8)) } catch { failure = reason(error) }
        }
        return failure
    }

    private static func writeFile(_ path: String, _ produce: ((String) -> Void) -> Void) -> String? {
        do { try OutputFile.write(path, produce) } catch { return error.reason }
        return nil
    }

    /// Reports a run that stopped as a whole (bad manifest, lock held) and exits: the
    /// error is the last line, with no item summary after it (no item was looked at).
    static func fail(
        _ error: SyncError, command: String, manifest: String?, reportPath: String?, junitPath: String?,
        outputs: OperatorOutputs? = nil
    ) -> Never {
        Terminal.error(error.localizedDescription)
        let now = Date()
        var report = RunReport(command: command, manifest: manifest, started: now, finished: now, items: [], exitCode: error.exitCode)
        report.error = error.itemError
        if reportPath != nil || junitPath != nil || outputs != nil {
            finish(report, reportPath: reportPath, junitPath: junitPath, quiet: true, summary: false, outputs: outputs)
        }
        Foundation.exit(error.exitCode.rawValue)
    }
}
