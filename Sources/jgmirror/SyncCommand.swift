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

    @Flag(
        help:
            "After a run in which every item and list succeeded, delete files under the root that no item produces, then empty folders."
    )
    var delete = false

    @Option(
        name: .customLong("max-delete"),
        help:
            "Refuse (exit 4, nothing deleted or fetched) to delete more files than N, or more than P% of the files under the root; a set whose folder would lose more than P% fails alone (list_shrunk, exit 1, none of it deleted) (default \(Rules.maxDeleteCount.defaultText) and \(Rules.maxDeleteShare.row.defaultText); repeat to set both; 0 forbids deleting)."
    )
    var maxDelete: [String] = []

    @Option(
        name: .customLong("keep-removed"),
        help:
            "With --delete: keep a file that left every list for D (0s, 12h, 1d; at most 365d) before deleting it, for every set and file, whatever the manifest's keep_removed says (default: the set's keep_removed, else defaults', else 0s, 1d for apt sets)."
    )
    var keepRemoved: KeepRemoved?

    @Option(
        name: .customLong("max-duration"),
        help:
            "Stop the run after D (at least 1s: 30s, 2m, 2h), counted from its start, its lists included, as on SIGINT: resume state is kept, the report written, unfinished items are interrupted and lists not yet fetched fail, with code deadline, exit 1."
    )
    var maxDuration: String?

    @Option(
        name: .customLong("backup-dir"),
        help:
            "Move files that --delete removes or the sync replaces to DIR/<run start>/<path> instead (same file system as the root)."
    )
    var backupDir: String?

    @Option(
        help:
            "How changes become visible to readers of the tree: ordered (new files, then lists, then links, then deletions) or snapshot (build the new tree beside the published one and swap ROOT/current to it). Default: snapshot when a set at the root has 'publish: snapshot', else ordered; a set below the root with 'publish: snapshot' swaps its own folder, a link to its own snapshots, in either."
    )
    var publish: PublishMode?

    @Option(
        help:
            "Published snapshots to keep under --publish snapshot, and of each set published as snapshots of its own, the one a run builds not counted (\(Rules.keep.rangeText); default: the set's 'keep:', else \(Rules.keep.defaultText)); once a run publishes, the newest of the older ones becomes the base of the next run's snapshot and the rest are removed; a run that changes nothing publishes and removes nothing."
    )
    var keep: WholeNumber?

    /// Fault injection for the crash test, not an interface: set to a step of
    /// snapshot publishing (`cloning`, `built`, `renamed`, `swapped`, `pruning`), the
    /// process kills itself (SIGKILL) there.
    static let crashInSnapshot = "JGMIRROR_TEST_CRASH_IN_SNAPSHOT"

    /// Fault injection for the crash test, not an interface: set, the process kills
    /// itself (SIGKILL) after placing its first batch of files and before recording
    /// them in the state database, where a crash costs the most.
    static let crashBeforeRecording = "JGMIRROR_TEST_CRASH_BEFORE_RECORDING"

    /// Fault injection for the crash test, not an interface: set to N, the process
    /// kills itself (SIGKILL) once `--delete` has removed N files.
    static let crashAfterDeletions = "JGMIRROR_TEST_CRASH_AFTER_DELETIONS"

    func validate() throws {
        if let keep, let problem = Rules.keep.problem(keep.value) { throw ValidationError("--keep \(problem)") }
        do { _ = try DeleteLimits(parsing: maxDelete) } catch { throw ValidationError(error.message) }
        if let maxDuration {
            guard let seconds = Units.parseDuration(maxDuration) else {
                throw ValidationError("--max-duration must be a duration such as 30s, 2m or 2h, not '\(maxDuration)'")
            }
            if let problem = Rules.durationProblem(seconds, in: Rules.maxDuration) {
                throw ValidationError("--max-duration \(problem)")
            }
        }
    }

    func run() async throws {
        let outputs = try operatorOptions.outputs(manifest: manifestOptions.manifest)
        // Refused before the lists of `sets:` are fetched (the session refuses it too).
        if delete, !manifestOptions.tags.isEmpty || !manifestOptions.skipTags.isEmpty || manifestOptions.shard != nil {
            try manifestOptions.fail(.usage(.deleteUnderFilter), command: .sync, outputs: outputs)
        }
        var options = transferOptions.syncOptions(
            allowFileURLs: manifestOptions.allowFileURLs, requireChecksums: manifestOptions.requireChecksums)
        // Before the lists: the time they take counts against the run's deadline.
        options.maxDuration = maxDuration.flatMap(Units.parseDuration)
        let plan = try await manifestOptions.loadPlan(
            command: .sync, maxSize: transferOptions.maxSizeBytes, outputs: outputs, transfer: options)
        options.failFast = failFast
        let progress = ProgressRenderer(mode: transferOptions.progress, verbosity: manifestOptions.verbosity)
        options.emitsEvents = options.emitsEvents || outputs.wantsEvents
        options.announcesSettledItems = outputs.wantsEvents || progress.showsSettledItems
        options.rehash = rehash
        options.delete = delete
        options.deleteLimits = (try? DeleteLimits(parsing: maxDelete)) ?? DeleteLimits()
        options.backupDir = backupDir
        options.publish = publish
        options.keep = keep?.value
        options.keepRemoved = keepRemoved?.seconds
        let environment = ProcessInfo.processInfo.environment
        if environment[Self.crashBeforeRecording] != nil {
            options.beforeRecording = {
                raise(SIGKILL)
                return false
            }
        }
        if let step = environment[Self.crashInSnapshot] {
            options.snapshotStep = { reached in if reached.rawValue == step { raise(SIGKILL) } }
        }
        if let text = environment[Self.crashAfterDeletions], let limit = Int(text) {
            options.afterDeletion = { deleted in if deleted >= limit { raise(SIGKILL) } }
        }
        let session = SyncSession(plan: plan, options: options)
        let report: RunReport
        do {
            report = try await session.runHandlingSignals(
                progress: progress, clearOnSignal: transferOptions.noResume, outputs: outputs, notice: Terminal.info)
        } catch {
            try manifestOptions.fail(error, command: .sync, outputs: outputs)
        }
        try manifestOptions.finish(report, outputs: outputs)
    }
}

extension PublishMode: ExpressibleByArgument {}
