import ArgumentParser
import JGMirror

/// `jgmirror sync MANIFEST`: fetch what is missing or stale, verify, report.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Fetch what is missing or stale, verify it, and report.")

    @OptionGroup var manifestOptions: ManifestOptionGroup
    @OptionGroup var transferOptions: TransferOptionGroup
    @OptionGroup var operatorOptions: OperatorOptionGroup

    @Flag(name: .customLong("fail-fast"), help: "Start no new item after the first failure.")
    var failFast = false

    func run() async throws {
        let outputs = operatorOptions.outputs(reportPath: manifestOptions.report)
        var options = transferOptions.syncOptions(
            allowFileURLs: manifestOptions.allowFileURLs, requireChecksums: manifestOptions.requireChecksums)
        let plan = await manifestOptions.loadPlan(
            command: "sync", maxSize: transferOptions.maxSizeBytes, outputs: outputs, transfer: options)
        options.failFast = failFast
        options.emitsEvents = options.emitsEvents || outputs.wantsEvents
        let session = SyncSession(plan: plan, options: options)
        let progress = ProgressRenderer(mode: transferOptions.progress, verbosity: manifestOptions.verbosity)
        do {
            let report = try await SessionRunner.run(session, progress: progress, clearOnSignal: transferOptions.noResume, outputs: outputs)
            manifestOptions.finish(report, outputs: outputs)
        } catch {
            manifestOptions.fail(error, command: "sync", outputs: outputs)
        }
    }
}
