import ArgumentParser
import JGMirror

/// `jgmirror verify MANIFEST`: hash what is on disk against the manifest and the
/// hashes its lists give; it fetches lists, never items.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Hash what is on disk against the manifest and its lists, on all cores; no item is fetched.")

    @OptionGroup var manifestOptions: ManifestOptionGroup
    @OptionGroup var operatorOptions: OperatorOptionGroup
    @OptionGroup var trust: TrustOptionGroup

    @Option(help: "Progress display: auto, bars, lines or none (none still names every problem).")
    var progress: ProgressRenderer.Mode = .lines

    func run() async throws {
        let outputs = try operatorOptions.outputs(manifest: manifestOptions.manifest)
        let plan = try await manifestOptions.loadPlan(
            command: .verify, outputs: outputs, transfer: trust.listOptions)
        let report: RunReport
        do {
            // Once the lists have given their hashes, as sync checks it.
            if manifestOptions.requireChecksums { try plan.requireChecksums() }
            report = try await Verification.run(plan: plan)
        } catch {
            try manifestOptions.fail(error, command: .verify, outputs: outputs)
        }
        let renderer = ProgressRenderer(mode: progress, verbosity: manifestOptions.verbosity)
        let (stream, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
        for item in report.items {
            outputs.write(.itemFinished(item))
            continuation.yield(.itemFinished(item))
        }
        continuation.finish()
        await renderer.consume(stream)
        renderer.reportProblems(in: report)
        try manifestOptions.finish(report, outputs: outputs)
    }
}
