import ArgumentParser
import Foundation
import JGMirror

/// `jgmirror`: keep a directory identical to a manifest of remote files.
struct JGMirrorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jgmirror",
        abstract: "Keep a directory identical to a YAML manifest of remote files.",
        discussion: """
            Exit codes: 0 all present and verified, 1 a download failed, 2 usage or manifest error,
            3 checksum mismatch or missing file, 4 local failure (disk, permissions, lock), 130 interrupted.
            """,
        version: JGMirrorVersion.string,
        subcommands: [SyncCommand.self, VerifyCommand.self, PlanCommand.self, GetCommand.self, ReportCommand.self]
    )
}

/// Parses the command line, maps usage errors to exit 2 (SPEC §9) rather than
/// ArgumentParser's 64, and runs the command.
@main
enum Entry {
    static func main() async {
        // Past a file-size limit (`ulimit -f`) a write must fail the item with the
        // path named (exit 4), not kill the run before its report is written.
        signal(SIGXFSZ, SIG_IGN)
        do {
            var command = try JGMirrorCommand.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = JGMirrorCommand.exitCode(for: error)
            if code == ArgumentParser.ExitCode.success {
                print(JGMirrorCommand.fullMessage(for: error))
                Foundation.exit(0)
            }
            Terminal.error(JGMirrorCommand.fullMessage(for: error))
            Foundation.exit(JGMirror.ExitCode.usage.rawValue)
        }
    }
}
