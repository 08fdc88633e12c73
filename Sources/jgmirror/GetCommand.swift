import ArgumentParser
import Foundation
import JGMirror

/// `jgmirror get URL -o FILE`: one accelerated download with the sync engine.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Download one URL over several connections, verify, and place it.")

    @Argument(help: "The URL to fetch.")
    var url: String

    @Option(
        name: [.short, .customLong("output")],
        help: "Destination file; a folder (existing, '.', or ending in '/') keeps the URL's file name.")
    var output: String

    // `.unconditional`: "-1" is the value, for the range check to answer.
    @Option(
        name: [.short, .customLong("connections")], parsing: .unconditional,
        help: ArgumentHelp(Rules.connections.optionHelp()))
    var connections = WholeNumber(Rules.connections.defaultValue)

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "\(Rules.retriesRow.help) (\(Rules.retriesRow.bounds ?? ""); default \(Rules.retriesRow.defaultText))."))
    var retries: WholeNumber?

    @Option(help: "Expected SHA-256 (hex); a mismatch leaves the bytes in FILE.jgbad and exits 3.")
    var sha256: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("\(Rules.tagRow.help) (\(Rules.tagRow.bounds ?? ""))."))
    var tag: WholeNumber?

    @Option(name: .customLong("min-segment"), help: ArgumentHelp(Rules.minSegment.optionHelp()))
    var minSegment = Rules.minSegment.defaultText

    @Option(help: ArgumentHelp(Rules.timeout.optionHelp()))
    var timeout = Rules.timeout.defaultText

    @Option(name: .customLong("header"), help: "Extra request header 'K: V' (repeatable).")
    var headers: [String] = []

    @Flag(help: "Do not verify the server's TLS certificate.")
    var insecure = false

    @Flag(name: .customLong("allow-file-urls"), help: "Accept a file:// URL.")
    var allowFileURLs = false

    @Option(help: "Write the JSON report there ('-' for stdout).")
    var report: String?

    @Flag(help: "Only problems on stderr.")
    var quiet = false

    @Flag(help: "Every event on stderr.")
    var verbose = false

    @OptionGroup var transferOptions: TransferOptionGroup

    func run() async throws {
        var download = Download(url: url, destination: output)
        download.connections = connections.value
        download.retries = retries?.value
        download.sha256 = sha256
        download.tag = tag?.value
        download.insecure = insecure
        download.headers = try parseHeaders(headers)
        download.maxSize = transferOptions.maxSizeBytes
        // A destination `Download` refuses is said below; one it takes no report may replace.
        let destination = (try? download.destinationFile()).map { [OutputTarget.Guarded.file($0, what: "the destination of -o")] }
        let outputs = try RunOutputs.open([("--report", report, .report)], guarding: destination ?? [])
        // The bounds are `Download`'s to check, as for any caller of the library.
        guard let segment = Units.parseSize(minSegment) else {
            throw ValidationError("--min-segment takes a size such as \(Rules.minSegment.defaultText), not '\(minSegment)'")
        }
        guard let stall = Units.parseDuration(timeout) else {
            throw ValidationError("--timeout takes a duration such as \(Rules.timeout.defaultText), not '\(timeout)'")
        }
        download.minSegment = segment
        download.timeout = stall
        let options = transferOptions.syncOptions(allowFileURLs: allowFileURLs, requireChecksums: false)
        let session: SyncSession
        do { session = try download.session(options: options) } catch {
            throw ValidationError(error.errorDescription ?? error.message)
        }
        let progress = ProgressRenderer(mode: transferOptions.progress, verbosity: .init(quiet: quiet, verbose: verbose))
        let result: RunReport
        do {
            result = try await session.runHandlingSignals(
                progress: progress, clearOnSignal: transferOptions.noResume, outputs: outputs, notice: Terminal.info)
        } catch .manifest(let refusal) {
            // There is no manifest to point into: the refusal is said on its own.
            try Terminal.fail(.usage(UsageError(refusal.message)), command: .get, manifest: nil, outputs: outputs)
        } catch {
            try Terminal.fail(error, command: .get, manifest: nil, outputs: outputs)
        }
        try Terminal.finish(result, outputs: outputs, quiet: quiet)
    }
}
