import ArgumentParser
import Foundation
import JGMirror

/// `jgmirror plan MANIFEST`: the expanded queue and what sync would do; no transfer.
struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Print the expanded queue and what sync would do with each item; no transfer (sets' lists are fetched).")

    @OptionGroup var manifestOptions: ManifestOptionGroup
    @OptionGroup var trust: TrustOptionGroup

    @Flag(name: .customLong("no-resume"), help: "Show what sync --no-resume would do.")
    var noResume = false

    @Flag(help: "Also show the files sync --delete would delete.")
    var delete = false

    @Option(
        name: .customLong("max-delete"),
        help: "The limits sync --delete would be run with (a count N or a share P%; repeat to set both).")
    var maxDelete: [String] = []

    @Option(
        name: .customLong("keep-removed"),
        help: "The grace period sync --delete would be run with (a duration such as 0s, 12h or 1d).")
    var keepRemoved: KeepRemoved?

    func validate() throws {
        do { _ = try DeleteLimits(parsing: maxDelete) } catch { throw ValidationError(error.message) }
    }

    func run() async throws {
        let loaded = try await manifestOptions.loadPlan(
            command: .plan, transfer: trust.listOptions)
        // A tree published as snapshots is read where `current` points; its state stays at the root.
        let plan = loaded.publishedTree()
        do { try plan.checkDestinationsOnDisk() } catch {
            try manifestOptions.fail(.manifest(error), command: .plan, outputs: nil)
        }
        if delete, plan.isFiltered {
            try manifestOptions.fail(
                .usage(
                    UsageError(
                        "--delete cannot be combined with --shard, --tag or --skip-tag: the plan does not see the whole manifest")
                ),
                command: .plan, outputs: nil)
        }
        // A list that failed fails its set alone; sync would report it and delete nothing.
        for failure in plan.manifest.listFailures { Terminal.error("\(failure.result.dest): \(failure.error.message)") }
        // The state database's records spare hashing files it vouches for, as in sync.
        let store = StateStore.openExisting(root: loaded.root)
        defer { store?.close() }
        let records = (try? store?.recordTable()) ?? RecordTable()
        // Two passes, no table in memory: a 100,000-item plan prints in well under a second.
        let (leading, widths, assessed) = assess(plan, records: records)
        var counts = assessed
        var output = TableWriter(widths: widths)
        try output.row(["ACTION", "SIZE", "CONN", "TAG", "DEST"], last: "URL")
        for (item, (action, size)) in zip(plan.items, leading) {
            let mirrors = item.mirrors.isEmpty ? "" : " (+\(item.mirrors.count) mirror\(item.mirrors.count == 1 ? "" : "s"))"
            // A link item fetches nothing: its last column is where the link points.
            try output.row(
                [action, size, item.isLink ? "-" : String(item.connections), item.tag.map(String.init) ?? "-", item.dest],
                last: item.link.map { "-> " + Rules.printable($0) } ?? item.displayURL + mirrors)
        }
        let (shrunk, refused) =
            delete ? try printDeletions(plan, loaded: loaded, store: store, to: &output, counts: &counts) : ([], false)
        try output.flush()
        let summary = counts.keys.sorted().map { "\(counts[$0]!) \($0)" }.joined(separator: ", ")
        Terminal.info(
            "plan: \(plan.items.count) of \(plan.totalInManifest) items selected under \(plan.root)"
                + (summary.isEmpty ? "" : ": \(summary)"))
        // What `hosts:` gives each origin, with what it leaves to `defaults` filled in.
        for line in plan.manifest.hostLines { Terminal.info("plan: host \(line)") }
        // A failed list fails its set in sync too (exit 1, or 3 for a signature), as does
        // a list that shrank past --max-delete's share; sync --delete over the count or
        // the root's share refuses the whole run (exit 4).
        let failed = JGMirror.ExitCode.combine(
            [JGMirror.ExitCode.forResults(plan.manifest.listFailures.map(\.result) + shrunk)] + (refused ? [.local] : []))
        if failed != .success { throw ArgumentParser.ExitCode(failed) }
    }

    /// The first pass over `plan`: each item's action and size, how many items take
    /// each action, and the widths of the table's columns.
    private func assess(_ plan: Plan, records: RecordTable) -> (
        leading: [(action: String, size: String)], widths: [Int], counts: [String: Int]
    ) {
        var counts: [String: Int] = [:]
        var leading: [(action: String, size: String)] = []
        leading.reserveCapacity(plan.items.count)
        var widths = ["ACTION", "SIZE", "CONN", "TAG", "DEST"].map(\.count)
        // Nothing exists under a missing folder: a fresh mirror plans without a stat per item.
        var folderExists: [String: Bool] = [:]
        for item in plan.items {
            let folder = Paths.parent(of: item.path)
            let exists = folderExists[folder] ?? FileManager.default.fileExists(atPath: folder)
            folderExists[folder] = exists
            let assessment = exists ? item.assess(resume: !noResume, record: records[item.dest]) : nil
            let action = (assessment?.action ?? (item.isLink ? .link : .fetch)).rawValue
            counts[action, default: 0] += 1
            let size = (item.size ?? assessment?.size).map(Units.formatBytes) ?? "-"
            leading.append((action, size))
            widths[0] = max(widths[0], action.count)
            widths[1] = max(widths[1], size.count)
            widths[2] = max(widths[2], item.isLink ? 1 : String(item.connections).count)
            widths[3] = max(widths[3], item.tag.map { String($0).count } ?? 1)
            widths[4] = max(widths[4], item.dest.count)
        }
        return (leading, widths, counts)
    }

    /// Prints a `delete` row for each file and stale link `sync --delete` would remove
    /// from `plan` (the tree `plan` reads; `loaded`: the plan as loaded), and a line for
    /// each set it would fail instead. Returns those sets' failed rows, and whether sync
    /// would refuse the whole run.
    private func printDeletions(
        _ plan: Plan, loaded: Plan, store: StateStore?, to output: inout TableWriter, counts: inout [String: Int]
    ) throws -> (shrunk: [ItemResult], refused: Bool) {
        // The decision sync --delete carries out, in the tree `plan` reads.
        let deletions = Deletions.find(
            in: plan, setRoots: loaded.publishedSetRoots, limits: (try? DeleteLimits(parsing: maxDelete)) ?? DeleteLimits(),
            keepRemoved: keepRemoved?.seconds, absences: store?.absences() ?? [:])
        if let refusal = deletions.refusal { Terminal.error("sync --delete would refuse: \(refusal)") }
        for set in deletions.shrunk { Terminal.error("\(set.dest): \(set.error?.message ?? "")") }
        if !deletions.files.isEmpty { counts["delete"] = deletions.files.count }
        for file in deletions.files {
            // A name found on disk may hold any byte but `/` and NUL: one row each, escaped.
            try output.row(["delete", Units.formatBytes(file.size), "-", "-", Rules.printable(file.path)], last: "-")
        }
        // Files no item produces any more, kept for their grace period (keep_removed).
        let kept = deletions.keptResults()
        if !kept.isEmpty { counts["keep"] = kept.count }
        for file in kept {
            try output.row(
                ["keep", file.bytes.map(Units.formatBytes) ?? "-", "-", "-", Rules.printable(file.dest)],
                last: "until " + (file.keptUntil ?? "?"))
        }
        // Links that `link:` items placed and no item makes any more.
        let managed = (try? store?.links()) ?? [:]
        let links = Prune.staleLinks(items: plan.items, managed: managed, keeping: plan.manifest.distrustedFolders)
        if !links.isEmpty { counts["delete", default: 0] += links.count }
        for dest in links {
            try output.row(["delete", "-", "-", "-", Rules.printable(dest)], last: "-> " + Rules.printable(managed[dest] ?? ""))
        }
        return (deletions.shrunk, deletions.refusal != nil)
    }
}

/// Left-aligned columns written to stdout in 64 KiB chunks.
struct TableWriter {
    let widths: [Int]
    private var buffer = ""

    init(widths: [Int]) { self.widths = widths }

    mutating func row(_ cells: [String], last: String) throws(ArgumentParser.ExitCode) {
        for (cell, width) in zip(cells, widths) {
            buffer += cell
            buffer += String(repeating: " ", count: max(0, width - cell.count) + 2)
        }
        buffer += last
        buffer += "\n"
        if buffer.utf8.count >= 64 << 10 { try flush() }
    }

    mutating func flush() throws(ArgumentParser.ExitCode) {
        try Terminal.out(buffer)
        buffer = ""
    }
}
