import Foundation
import JGMirror

/// stderr for people, stdout only for what was asked for (SPEC §2).
enum Terminal {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("jgmirror: \(message)\n".utf8))
    }

    /// Something allowed but likely wrong; the run goes on.
    static func warning(_ message: String) {
        FileHandle.standardError.write(Data("jgmirror: warning: \(message)\n".utf8))
    }

    static func info(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }

    /// Writes the JSON and JUnit reports where asked, then exits with the report's code.
    /// The summary line starts with `label` (default: the report's command).
    static func finish(
        _ report: RunReport, reportPath: String?, junitPath: String?, quiet: Bool, label: String? = nil, summary: Bool = true,
        outputs: OperatorOutputs? = nil
    ) -> Never {
        var code = report.exitCode
        for warning in report.warnings { error(warning) }
        if let reportPath {
            do {
                let data = try report.jsonData() + Data("\n".utf8)
                if reportPath == "-" {
                    FileHandle.standardOutput.write(data)
                } else {
                    try data.write(to: URL(fileURLWithPath: reportPath), options: .atomic)
                }
            } catch {
                Terminal.error("cannot write report \(reportPath): \(error.localizedDescription)")
                code = JGMirror.ExitCode.combine([code, .local])
            }
        }
        if let junitPath {
            do {
                try Data(JUnitReport.xml(for: report).utf8).write(to: URL(fileURLWithPath: junitPath), options: .atomic)
            } catch {
                Terminal.error("cannot write JUnit report \(junitPath): \(error.localizedDescription)")
                code = JGMirror.ExitCode.combine([code, .local])
            }
        }
        if let outputs {
            var final = report
            final.exitCode = code
            code = outputs.finish(final)
        }
        if summary, !quiet || code != .success { info(ProgressRenderer.summary(report, label: label)) }
        Foundation.exit(code.rawValue)
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
