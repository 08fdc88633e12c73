import ArgumentParser
import Foundation
import JGMirror

/// stderr for people, stdout only for what was asked for (docs/commands.md#terminal-and-stdout).
enum Terminal {
    static func error(_ message: String) { say("jgmirror: \(message)\n") }

    /// Something allowed but likely wrong; the run goes on.
    static func warning(_ message: String) { say("jgmirror: warning: \(message)\n") }

    static func info(_ message: String) { say("\(message)\n") }

    /// Writes to stderr; a closed or full stderr loses the line, not the run.
    private static func say(_ text: String) { try? FileHandle.standardError.write(contentsOf: Data(text.utf8)) }

    /// Writes what was asked for to stdout (`plan`'s table). A reader that went away
    /// (`plan | head`) ends the process as SIGPIPE would have; any other failure says
    /// why and ends the command with exit 4.
    static func out(_ text: String) throws(ArgumentParser.ExitCode) {
        do { try FileHandle.standardOutput.write(contentsOf: Data(text.utf8)) } catch {
            if posixCode(error) == EPIPE {
                signal(SIGPIPE, SIG_DFL)
                raise(SIGPIPE)
            }
            Terminal.error("cannot write to stdout: \(reason(error))")
            throw ExitCode(JGMirror.ExitCode.local)
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

    /// Writes the outputs `outputs` asks for, each with the final exit code, then ends
    /// the command with that code (a thrown `ExitCode`, 0 included). The summary line
    /// starts with `label` (default: the report's command) and names the code.
    static func finish(
        _ report: RunReport, outputs: RunOutputs, quiet: Bool, label: String? = nil, summary: Bool = true
    ) throws(ArgumentParser.ExitCode) -> Never {
        for warning in report.warnings { error(warning) }
        var report = report
        report.exitCode = outputs.finishing(report)
        if summary, !quiet || report.exitCode != .success { info(ProgressRenderer.summary(report, label: label)) }
        throw ExitCode(report.exitCode)
    }

    /// Reports a run that stopped as a whole (bad manifest, lock held) and ends the
    /// command with its code: the error is the last line, with no item summary after it
    /// (no item was looked at).
    static func fail(
        _ error: SyncError, command: RunCommand, manifest: String?, outputs: RunOutputs?
    ) throws(ArgumentParser.ExitCode) -> Never {
        Terminal.error(error.localizedDescription)
        let now = Date()
        var report = RunReport(
            command: command, manifest: manifest, started: now, finished: now, items: [], exitCode: error.exitCode)
        report.error = error.itemError
        if let outputs { try finish(report, outputs: outputs, quiet: true, summary: false) }
        throw ExitCode(error.exitCode)
    }
}

extension ArgumentParser.ExitCode {
    /// The process ends with `code` (docs/exit-codes.md#exit-codes) once the command has thrown
    /// this.
    init(_ code: JGMirror.ExitCode) { self.init(code.rawValue) }
}
