import ArgumentParser
import JGMirror

/// `jgmirror verify MANIFEST`: hash what is on disk; no network.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Hash what is on disk against the manifest, on all cores; no network.")

    @OptionGroup var manifestOptions: ManifestOptionGroup
    @OptionGroup var operatorOptions: OperatorOptionGroup

    @Option(help: "Progress display: auto, bars, lines or none (none still names every problem).")
    var progress: ProgressRenderer.Mode = .lines

    func run() async throws {
        let outputs = operatorOptions.outputs()
        let plan = await manifestOptions.loadPlan(command: "verify", outputs: outputs)
        do {
            let report = try Verification.run(plan: plan)
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
