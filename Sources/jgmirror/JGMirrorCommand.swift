import ArgumentParser
import CLinux
import Foundation
import JGMirror

/// `jgmirror`: keep a directory identical to a manifest of remote files.
struct JGMirrorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jgmirror",
        abstract: "Keep a directory identical to a YAML manifest of remote files.",
        discussion: """
            jgmirror keeps a directory tree identical to a YAML manifest of remote files. \
            sync fetches each missing or stale file over several HTTP Range connections, \
            verifies its SHA-256 before it takes its place, and writes reports an operator \
            or a CI job can read. Human output goes to stderr; stdout carries only what \
            was asked for (the plan table, --report -, --events -).

            EXIT CODES: \(exitCodes)

            \(Rules.manifestSummary) Checksums lists are fetched \
            conditionally: sync keeps each one with its ETag and Last-Modified in \
            ROOT/.jgmirror/lists/ and uses that copy when the server answers 304 Not \
            Modified (plan and verify read the copies, never write them); a signed list \
            is checked with gpgv against the bytes used on every run.

              version: 1
              root: mirror
              defaults: {connections: 6, tags: [nightly]}
              sets:
                - sums: https://releases.example.org/24.04/SHA256SUMS
                  signature: https://releases.example.org/24.04/SHA256SUMS.gpg
                  keyring: keys/release.gpg
                  dest: ubuntu/24.04/
                  include: ["*.iso"]
              items:
                - url: https://example.org/releases/os.iso
                  dest: isos/os.iso
                  sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08

            EXAMPLES:

              jgmirror plan site.yaml
              jgmirror sync site.yaml --report report.json --metrics jgmirror.prom
              jgmirror sync site.yaml --events - --progress none
              jgmirror verify site.yaml
              jgmirror get https://example.org/os.iso -o os.iso -c 8 --sha256 HEX
            """,
        version: JGMirrorVersion.string,
        subcommands: [SyncCommand.self, VerifyCommand.self, PlanCommand.self, GetCommand.self, ReportCommand.self]
    )

    /// The exit codes in one paragraph, from `JGMirror.ExitCode`'s table.
    static var exitCodes: String {
        JGMirror.ExitCode.allCases.map { "\($0.rawValue) \($0.meaning)." }.joined(separator: " ") + " "
            + JGMirror.ExitCode.precedenceRule
    }

    /// Not an interface: `scripts/manpage.sh` makes the man page's EXIT STATUS from
    /// it, so that the page and `--help` say what `JGMirror.ExitCode` says.
    @Flag(name: .customLong("exit-code-table"), help: .hidden)
    var exitCodeTable = false

    /// Not an interface: `scripts/docs.sh` writes the sections of docs/ that mirror a
    /// table of the code (`ReferencePage`: the manifest's keys, the exit and error
    /// codes) from it, and fails while a committed page differs.
    @Option(name: .customLong("generate-reference"), help: .hidden)
    var generateReference: String?

    /// Prints the exit codes, one `CODE<TAB>MEANING` line each and then the rule for
    /// several (`order<TAB>…`), or a section of docs/; with no subcommand and no
    /// flag, the help, as before.
    func run() async throws {
        if let generateReference {
            guard let section = ReferencePage.section(generateReference) else {
                throw ValidationError(
                    "--generate-reference takes one of \(ReferencePage.sections.joined(separator: ", ")), not '\(generateReference)'"
                )
            }
            return try Terminal.out(section)
        }
        guard exitCodeTable else { throw CleanExit.helpRequest(self) }
        var lines = JGMirror.ExitCode.allCases.map { "\($0.rawValue)\t\($0.meaning)" }
        lines.append("order\t" + JGMirror.ExitCode.precedenceRule)
        try Terminal.out(lines.joined(separator: "\n") + "\n")
    }
}

/// Parses the command line, runs the command, and ends the process with the status
/// docs/exit-codes.md#exit-codes gives: what a command threw as `ExitCode`, 2 for a usage error
/// (rather than ArgumentParser's 64). As in swift-argument-parser's own `main`, the one
/// place that ends the process is here: `exit(withError:)` with what `run` threw.
@main
enum Entry {
    static func main() async {
        // Past a file-size limit (`ulimit -f`) a write must fail the item with the
        // path named (exit 4), not kill the run before its report is written.
        signal(SIGXFSZ, SIG_IGN)
        // A reader of stdout or stderr that goes away (`--events - | head -1`) must not
        // kill a run before it saves resume state and writes its report and metrics:
        // writes fail instead (`Terminal`, `RunOutputs`).
        signal(SIGPIPE, SIG_IGN)
        // One malloc arena for every thread (unless the environment sets a limit):
        // with one per thread (glibc's default, up to eight per core) memory one
        // thread freed stayed out of another's reach, and a 100,000-item sync peaked
        // 11 MiB higher. No slower, measured: bench/RESULTS.md.
        _ = jg_use_one_malloc_arena()
        do {
            try await run()
        } catch {
            JGMirrorCommand.exit(withError: error)
        }
    }

    /// Runs the command line's command. A failure leaves as an `ExitCode`, having been
    /// said on stderr (a command says it before it throws); `--help`, `--version` and
    /// the completion scripts leave as ArgumentParser's clean exits, which
    /// `exit(withError:)` prints on stdout with status 0.
    static func run() async throws {
        do {
            var command = try JGMirrorCommand.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ArgumentParser.ExitCode {
            throw code
        } catch {
            // `--help`, `--version` and the completion scripts arrive as errors whose code is 0.
            if JGMirrorCommand.exitCode(for: error) == ArgumentParser.ExitCode.success { throw error }
            Terminal.error(JGMirrorCommand.fullMessage(for: error))
            throw ArgumentParser.ExitCode(JGMirror.ExitCode.usage)
        }
    }
}
