import ArgumentParser
import JGMirror

/// `jgmirror sync MANIFEST`: fetch what is missing or stale, verify, report.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Fetch what is missing or stale, verify it, and report.")

    @OptionGroup var manifestOptions: ManifestOptionGroup
    @OptionGroup var transferOptions: TransferOptionGroup

    @Flag(name: .customLong("fail-fast"), help: "Start no new item after the first failure.")
    var failFast = false

    func run() async throws {
        let plan = manifestOptions.loadPlan(command: "sync")
        var options = transferOptions.syncOptions(
            allowFileURLs: manifestOptions.allowFileURLs, requireChecksums: manifestOptions.requireChecksums)
        options.failFast = failFast
        let session = SyncSession(plan: plan, options: options)
        let progress = ProgressRenderer(mode: transferOptions.progress, verbosity: manifestOptions.verbosity)
        do {
            let report = try await SessionRunner.run(session, progress: progress, clearOnSignal: transferOptions.noResume)
            manifestOptions.finish(report)
        } catch {
            manifestOptions.fail(error, command: "sync")
        }
    }
}
