import Foundation

/// Turns sync events into what a person sees on stderr: live bars on a terminal,
/// one plain line per item event otherwise (cron, CI logs).
///
/// `@unchecked Sendable`: what it draws from (the live items, the lines on screen) is
/// used only under `lock`, which every public entry takes.
public final class ProgressRenderer: @unchecked Sendable {
    /// `--progress auto|bars|lines|none`.
    public enum Mode: String, Sendable, CaseIterable {
        case auto, bars, lines, none
    }

    public enum Verbosity: Sendable {
        case quiet, normal, verbose
    }

    private let bars: Bool
    private let silent: Bool
    private let verbosity: Verbosity
    private let output: FileHandle
    /// Held by `show`, `finish` and `reportProblems`: the state below is theirs.
    private let lock = NSLock()
    private var active: [String: ItemProgress] = [:]
    private var order: [String] = []
    private var finishedBytes: Int64 = 0
    private var lastDraw = Date.distantPast
    private var drawnLines = 0
    private let started = Date()

    public init(mode: Mode, verbosity: Verbosity = .normal, output: FileHandle = .standardError) {
        let tty = isatty(output.fileDescriptor) == 1
        bars = mode == .bars || (mode == .auto && tty && verbosity != .quiet)
        silent = mode == .none
        self.verbosity = verbosity
        self.output = output
    }

    /// Renders every event until the stream ends.
    public func consume(_ events: AsyncStream<SyncEvent>) async {
        for await event in events { show(event) }
        finish()
    }

    /// Renders one event; for a reader of the stream that hands each event to others
    /// too. Call `finish()` once the stream has ended.
    public func show(_ event: SyncEvent) {
        guard !silent else { return }
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .itemStarted(let start):
            if active[start.dest] == nil { order.append(start.dest) }
            active[start.dest] = ItemProgress(
                dest: start.dest, tag: start.tag, bytesThisRun: 0, bytesPresent: start.resumedFrom, expected: start.length,
                connections: start.connections)
            if !bars, verbosity == .verbose {
                let size = start.length.map(Units.formatBytes) ?? "unknown size"
                let resumed = start.resumedFrom > 0 ? ", resuming at \(Units.formatBytes(start.resumedFrom))" : ""
                line(
                    "start      \(start.dest) (\(size), \(start.connections) connection\(start.connections == 1 ? "" : "s")\(resumed))"
                )
            }
        case .progress(let progress):
            active[progress.dest] = progress
        case .itemFinished(let result):
            active[result.dest] = nil
            order.removeAll { $0 == result.dest }
            finishedBytes += result.bytesDownloaded
            if bars { clear() }
            report(result)
        }
        if bars, Date().timeIntervalSince(lastDraw) >= 0.1 { draw() }
    }

    /// Whether it shows items found as they should be (`--verbose`); when it does not,
    /// and nothing else reads the events, a run need not announce them
    /// (`SyncOptions.announcesSettledItems`).
    public var showsSettledItems: Bool { !silent && verbosity == .verbose }

    /// Takes the live bars off the terminal once the last event was shown, and says
    /// the problems still held back.
    public func finish() {
        lock.lock()
        defer { lock.unlock() }
        if bars { clear() }
        flushProblems()
    }

    /// Under `--progress none` no event is shown (or even delivered), but a person
    /// still needs to know why an item failed: prints one line per problem of the
    /// finished run, items with the same status, code and message on one line. Does
    /// nothing in the other modes, which printed them as they came.
    public func reportProblems(in run: RunReport) {
        guard silent else { return }
        lock.lock()
        defer { lock.unlock() }
        var groups: [ProblemGroup] = []
        var index: [ProblemGroup.Key: Int] = [:]
        run.forEachItem { result in
            guard result.status.isProblem else { return }
            let key = ProblemGroup.Key(result)
            if let at = index[key] {
                groups[at].add(result)
            } else {
                index[key] = groups.count
                groups.append(ProblemGroup(result))
            }
        }
        for group in groups { line(group.line) }
    }

    /// Items with one problem (status, error code and message), said on one line: a
    /// list that fails, fails every item of its set with one message, and a Ctrl-C
    /// interrupts every item in flight; a line each drowned the rest (147 lines).
    struct ProblemGroup {
        struct Key: Hashable {
            let status: ItemStatus
            let code: ErrorCode?
            let message: String?

            init(_ result: ItemResult) {
                status = result.status
                code = result.error?.code
                message = result.error?.message
            }
        }

        let key: Key
        /// The first item, said in full when it is the only one.
        let first: ItemResult
        /// The first two items' destinations, to name in the line.
        private(set) var named: [String]
        private(set) var count = 1

        init(_ result: ItemResult) {
            key = Key(result)
            first = result
            named = [result.dest]
        }

        mutating func add(_ result: ItemResult) {
            count += 1
            if named.count < 2 { named.append(result.dest) }
        }

        /// `failed      53 items (a.iso, b.iso, …): list: why`.
        var line: String {
            guard count > 1 else { return ProgressRenderer.line(for: first) }
            let names = named.map(Rules.printable).joined(separator: ", ") + (count > named.count ? ", …" : "")
            var text =
                key.status.rawValue.padding(toLength: ProgressRenderer.statusWidth, withPad: " ", startingAt: 0)
                + "\(count) items (\(names))"
            if let code = key.code { text += ": \(code): \(key.message ?? "")" }
            return text
        }
    }

    /// Problems alike in a row, held until a different line comes or the run ends, then
    /// said as one line. Held, not printed at once, so the line can carry the count.
    private var pendingProblems: ProblemGroup?

    private func flushProblems() {
        guard let group = pendingProblems else { return }
        pendingProblems = nil
        line(group.line)
    }

    /// The longest status an item shows and one space: every path starts in one
    /// column. `delete_skipped` and `kept_removed`, a file's rather than an item's, take
    /// what they need.
    static let statusWidth =
        ItemStatus.allCases.filter { $0 != .deleteSkipped && $0 != .keptRemoved }.map(\.rawValue.count).max()! + 1

    private func report(_ result: ItemResult) {
        if verbosity == .quiet && !result.status.isProblem { return }
        if verbosity == .normal && result.status.isSettled { return }
        if result.status.isProblem {
            if pendingProblems?.key == ProblemGroup.Key(result) {
                pendingProblems?.add(result)
            } else {
                flushProblems()
                pendingProblems = ProblemGroup(result)
            }
            return
        }
        flushProblems()
        line(Self.line(for: result))
    }

    /// The line for one finished item: status, path, and the error or the transfer.
    static func line(for result: ItemResult) -> String {
        // A pruned file's name comes from disk and may hold a newline: one line each, escaped.
        let status = result.status.rawValue
        var text =
            status.padding(toLength: max(Self.statusWidth, status.count + 1), withPad: " ", startingAt: 0)
            + Rules.printable(result.dest)
        if let error = result.error {
            text += ": \(error.code): \(error.message)"
        } else if let link = result.link {
            text += " -> " + Rules.printable(link)
        } else if let keptUntil = result.keptUntil {
            text += " (kept until \(keptUntil))"
        } else if result.bytesDownloaded > 0 {
            let speed = result.durationS > 0 ? Double(result.bytesDownloaded) / result.durationS : 0
            text +=
                " (\(Units.formatBytes(result.bytesDownloaded)) in \(String(format: "%.1f", result.durationS))s, \(Units.formatBytes(Int64(speed)))/s, \(result.connections) conn"
                + (result.resumedFrom > 0 ? ", resumed from \(Units.formatBytes(result.resumedFrom))" : "") + ")"
        }
        return text
    }

    private func draw() {
        lastDraw = Date()
        clear()
        var lines: [String] = []
        var total = finishedBytes
        var connections = 0
        for dest in order.prefix(8) {
            guard let item = active[dest] else { continue }
            lines.append(bar(item))
        }
        for item in active.values {
            total += item.bytesThisRun
            connections += item.connections
        }
        let elapsed = max(0.001, Date().timeIntervalSince(started))
        let remaining = active.values.reduce(Int64(0)) { $0 + max(0, ($1.expected ?? $1.bytesPresent) - $1.bytesPresent) }
        let speed = Double(total) / elapsed
        let eta = speed > 0 ? String(format: "%.0fs", Double(remaining) / speed) : "--"
        lines.append(
            "total \(Units.formatBytes(total)) at \(Units.formatBytes(Int64(speed)))/s, \(active.count) active, \(connections) connections, ETA \(eta)"
        )
        try? output.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8))
        drawnLines = lines.count
    }

    private func bar(_ item: ItemProgress) -> String {
        let width = 24
        let fraction = item.expected.map { $0 > 0 ? Double(item.bytesPresent) / Double($0) : 1 } ?? 0
        let filled = Int((fraction * Double(width)).rounded(.down))
        let graph = String(repeating: "#", count: min(width, filled)) + String(repeating: "-", count: max(0, width - filled))
        let name = item.dest.count > 40 ? "…" + item.dest.suffix(39) : item.dest
        let size = item.expected.map(Units.formatBytes) ?? "?"
        return "[\(graph)] \(String(format: "%3.0f", fraction * 100))% \(name) (\(size), \(item.connections) conn)"
    }

    private func clear() {
        guard drawnLines > 0 else { return }
        try? output.write(contentsOf: Data(String(repeating: "\u{1B}[1A\u{1B}[2K", count: drawnLines).utf8))
        drawnLines = 0
    }

    private func line(_ text: String) {
        try? output.write(contentsOf: Data((text + "\n").utf8))
    }

    /// One closing line: counts per status, bytes and time, after `label` (default:
    /// the report's command).
    public static func summary(_ report: RunReport, label: String? = nil) -> String {
        let totals = report.totals
        var parts: [String] = []
        let pairs: [(String, Int)] = [
            ("downloaded", totals.downloaded), ("unchanged", totals.unchanged), ("verified", totals.verified),
            ("unverified", totals.unverified), ("failed", totals.failed), ("mismatch", totals.mismatch),
            ("missing", totals.missing), ("interrupted", totals.interrupted), ("skipped", totals.skipped),
            ("deleted", totals.deleted), ("delete skipped", totals.deleteSkipped), ("kept removed", totals.keptRemoved),
            ("not served", totals.notServed),
        ]
        for (name, count) in pairs where count > 0 { parts.append("\(count) \(name)") }
        if parts.isEmpty { parts.append("nothing to do") }
        // What readers see after a run that publishes snapshots.
        let snapshots = ((report.snapshot.map { [$0] } ?? []) + report.setSnapshots).map { "; " + $0.summary }.joined()
        return "\(label ?? report.command): \(totals.items) item\(totals.items == 1 ? "" : "s"): " + parts.joined(separator: ", ")
            + snapshots
            + "; \(Units.formatBytes(totals.bytesDownloaded)) fetched in \(String(format: "%.2f", report.durationS))s; exit \(report.exitCode.rawValue)"
    }
}
