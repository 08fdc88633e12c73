import ArgumentParser
import Foundation
import JGMirror

/// `jgmirror report …`: work on reports.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Work with JSON reports.", subcommands: [MergeCommand.self])
}

/// `jgmirror report merge A.json B.json … [-o OUT]`: one report for all shards.
struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge", abstract: "Combine shard reports into one; exits with the code of the whole.")

    @Argument(help: "Reports to merge.")
    var reports: [String]

    @Option(name: [.short, .customLong("output")], help: "Write the merged report there (default: stdout).")
    var output: String?

    @Option(help: "Also write a JUnit XML report there.")
    var junit: String?

    @Option(help: "Also write Prometheus textfile metrics of the merged run there, atomically.")
    var metrics: String?

    func run() throws {
        guard !reports.isEmpty else { throw ValidationError("give at least one report to merge") }
        var loaded: [RunReport] = []
        for path in reports {
            guard let data = FileManager.default.contents(atPath: path) else {
                Terminal.error("cannot read \(path)")
                throw ExitCode(JGMirror.ExitCode.usage.rawValue)
            }
            do { loaded.append(try RunReport.decode(data)) } catch {
                Terminal.error("\(path) is not a jgmirror report: \(error)")
                throw ExitCode(JGMirror.ExitCode.usage.rawValue)
            }
        }
        let merged = RunReport.merge(loaded)
        Terminal.finish(
            merged, reportPath: output ?? "-", junitPath: junit, quiet: false,
            outputs: OperatorOutputs(events: nil, metricsPath: metrics))
    }
}
