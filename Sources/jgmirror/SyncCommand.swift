import ArgumentParser
import Foundation
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

    @Flag(help: "Hash every present file instead of trusting the state database's quick check.")
    var rehash = false

    @Flag(help: "Delete files under the root that no item produces, then empty folders.")
    var delete = false

    @Option(name: .customLong("max-delete"), help: "Refuse (exit 4, nothing deleted) to delete more files than this; 0 forbids deleting.")
    var maxDelete = 1000

    /// Fault injection for the crash test, not an interface: set, the process kills
    /// itself (SIGKILL) after placing its first batch of files and before recording
    /// them in the state database, where a crash costs the most.
    static let crashBeforeRecording = "JGMIRROR_TEST_CRASH_BEFORE_RECORDING"

    func validate() throws {
        guard maxDelete >= 0 else { throw ValidationError("--max-delete must be 0 or more") }
    }

    func run() async throws {
        let outputs = operatorOptions.outputs()
        // Refused before the lists of `sets:` are fetched (the session refuses it too).
        if delete, !manifestOptions.tags.isEmpty || !manifestOptions.skipTags.isEmpty || manifestOptions.shard != nil {
            manifestOptions.fail(.usage(.deleteUnderFilter), command: "sync", outputs: outputs)
        }
        var options = transferOptions.syncOptions(
            allowFileURLs: manifestOptions.allowFileURLs, requireChecksums: manifestOptions.requireChecksums)
        let plan = await manifestOptions.loadPlan(
            command: "sync", maxSize: transferOptions.maxSizeBytes, outputs: outputs, transfer: options)
        options.failFast = failFast
        options.emitsEvents = options.emitsEvents || outputs.wantsEvents
        options.rehash = rehash
        options.delete = delete
        options.maxDelete = maxDelete
        if ProcessInfo.processInfo.environment[Self.crashBeforeRecording] != nil {
            options.beforeRecording = {
                raise(SIGKILL)
                return false
            }
        }
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
