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
        commandName: "merge", abstract: "Combine shard reports into one; exits with the code of the whole.",
        discussion: """
            Reports of one run only (one manifest, filters and shard count; else exit 2). \
            Of each shard the latest attempt counts; a shard without a report makes the merged \
            report incomplete, exit 1 (shard_missing).
            """)

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
        // Before any report is read: a path no output may take is refused at once.
        let outputs = try RunOutputs.open([
            ("-o", output ?? "-", .report), ("--junit", junit, .junit), ("--metrics", metrics, .metrics),
        ])
        var loaded: [RunReport] = []
        for path in reports {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
                Terminal.error("cannot read report \(path): \(Terminal.reason(error))")
                throw ExitCode(JGMirror.ExitCode.usage)
            }
            do { loaded.append(try RunReport.decode(data)) } catch {
                Terminal.error("\(path) is not a jgmirror JSON report (\(Self.describe(decodingError: error)))")
                throw ExitCode(JGMirror.ExitCode.usage)
            }
        }
        let merged: RunReport
        do { merged = try RunReport.merge(loaded, names: reports) } catch {
            Terminal.error(error.errorDescription ?? error.message)
            throw ExitCode(JGMirror.ExitCode.usage)
        }
        // The summary counts items; a lost shard has none, so it is said on its own line.
        if merged.isIncomplete, let error = merged.error { Terminal.error("\(error.code): \(error.message)") }
        try Terminal.finish(merged, outputs: outputs, quiet: false, label: "report merge")
    }
}

extension MergeCommand {
    /// One line on why a file is not a report: not JSON, or which key is missing or wrong.
    static func describe(decodingError error: Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.isEmpty
                ? "the top level"
                : "'" + context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") + "'"
        }
        guard let error = error as? DecodingError else { return error.localizedDescription }
        switch error {
        case .keyNotFound(let key, let context):
            let within = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return "no '\(key.stringValue)' key\(within)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            if context.codingPath.isEmpty { return "not a JSON object" }
            return "\(path(context)) has the wrong type"
        case .dataCorrupted(let context):
            // Foundation's own descriptions are sentences about the document or the
            // number (`Number 1e+308 is not representable …`); ours name the bound.
            let why = context.debugDescription.isEmpty ? "" : ": \(context.debugDescription)"
            return (context.codingPath.isEmpty ? "not valid JSON" : "\(path(context)) is invalid") + why
        @unknown default:
            return "unreadable"
        }
    }
}
