import ArgumentParser
import JGMirror

/// `jgmirror verify MANIFEST`: hash what is on disk against the manifest and the
/// hashes its lists give; it fetches lists, never items.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Hash what is on disk against the manifest and its lists, on all cores; no item is fetched.")

    @OptionGroup var manifestOptions: ManifestOptionGroup
    @OptionGroup var operatorOptions: OperatorOptionGroup
    @OptionGroup var trust: ListTrustOptionGroup

    @Option(help: "Progress display: auto, bars, lines or none (none still names every problem).")
    var progress: ProgressRenderer.Mode = .lines

    func run() async throws {
        let outputs = operatorOptions.outputs()
        let options = trust.listOptions(allowFileURLs: manifestOptions.allowFileURLs)
        var plan = await manifestOptions.loadPlan(command: "verify", outputs: outputs, transfer: options)
        do {
            // The hashes `checksums:` lists give are checked as the manifest's are.
            let listWarnings = try await plan.applyChecksumLists(options: options)
            if manifestOptions.requireChecksums { try plan.requireChecksums() }
            var report = try Verification.run(plan: plan)
            report.warnings = listWarnings + report.warnings
            let renderer = ProgressRenderer(mode: progress, verbosity: manifestOptions.verbosity)
            let (stream, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
            for item in report.items {
                outputs.write(.itemFinished(item))
                continuation.yield(.itemFinished(item))
            }
            continuation.finish()
            await renderer.consume(stream)
            renderer.reportProblems(in: report)
            manifestOptions.finish(report, outputs: outputs)
        } catch {
            manifestOptions.fail(error, command: "verify", outputs: outputs)
        }
    }
}
