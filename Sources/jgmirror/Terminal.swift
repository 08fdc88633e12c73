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
        if let reportPath, let problem = write(report, to: reportPath) {
            Terminal.error("cannot write report \(reportPath): \(problem)")
            code = JGMirror.ExitCode.combine([code, .local])
        }
        if let junitPath, let problem = writeFile(junitPath, { JUnitReport.write(report, to: $0) }) {
            Terminal.error("cannot write JUnit report \(junitPath): \(problem)")
            code = JGMirror.ExitCode.combine([code, .local])
        }
        if let outputs {
            var final = report
            final.exitCode = code
            code = outputs.finish(final)
        }
        if summary, !quiet || code != .success { info(ProgressRenderer.summary(report, label: label)) }
        Foundation.exit(code.rawValue)
    }

    /// Writes the JSON report to `path` (stdout for `-`) piece by piece. Returns why it
    /// could not be written.
    private static func write(_ report: RunReport, to path: String) -> String? {
        let document: ((String) -> Void) -> Void = { write in
            report.writeJSON(write)
            write("\n")
        }
        guard path == "-" else { return writeFile(path, document) }
        document { FileHandle.standardOutput.write(Data($0.utf8)) }
        return nil
    }

    /// Writes what `produce` hands out to the file at `path`, which appears whole or not
    /// at all: it is written beside `path`, then renamed onto it. Returns why it could
    /// not be written.
    private static func writeFile(_ path: String, _ produce: ((String) -> Void) -> Void) -> String? {
        // A fresh name beside `path`, created with the mode any file the user writes
        // gets (the umask applies), unlike mkstemp's private 0600.
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 where fd < 0 {
            temporary = path + ".\(String(UInt32.random(in: 0...UInt32.max), radix: 36)).tmp"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            if fd < 0, errno != EEXIST { break }
        }
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        var failure: Int32 = 0
        produce { piece in
            guard failure == 0 else { return }
            if !writeAll(fd, piece) { failure = errno }
        }
        if close(fd) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure != 0 else { return nil }
        unlink(temporary)
        return String(cString: strerror(failure))
    }

    private static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var done = 0
            while done < bytes.count {
                let written = Foundation.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                done += written
            }
            return true
        }
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
