import Foundation

/// The JSON report of one run (docs/reports.md#json-report), and the model the library API returns.
public struct RunReport: Sendable, Decodable, Equatable {
    public var jgmirror: String = JGMirrorVersion.string
    public var command: String
    public var manifest: String?
    /// Which run this is (manifest digest, filters, shard, host); nil in reports of
    /// versions before it was recorded, and for runs that stopped before a plan.
    public var run: RunIdentity?
    public var started: Date
    public var finished: Date
    public var exitCode: ExitCode
    /// The results, in plan order. A sync's report builds them from compact rows each
    /// time this is read; the report writers read them one at a time instead.
    public var items: [ItemResult] {
        get { compactItems?.all ?? storedItems }
        set {
            storedItems = newValue
            compactItems = nil
        }
    }
    private var storedItems: [ItemResult]
    /// A sync's results as it kept them, until `items` is set.
    private var compactItems: ReportItems?
    /// A run-level error (lock held, checksums file unreachable), when the run stopped early.
    public var error: ItemError?
    /// One-line problems that did not change the outcome (a damaged state database
    /// that was rebuilt, …).
    public var warnings: [String] = []
    /// A merged report's shard reports, every attempt of each shard
    /// (docs/reports.md#merging-shard-reports).
    public var attempts: [ShardAttempt] = []
    /// The shards a merged report has no report of, in runs: it is `incomplete`, exit 1.
    public var missingShards: [ShardSpan] = []

    /// Whether a merged report lacks a shard.
    public var isIncomplete: Bool { !missingShards.isEmpty }
    /// Every origin the run's requests went to (docs/reports.md#hosts-section), by origin.
    public var hosts: [HostSummary] = []
    /// Under snapshot publishing, what `current` names after the run and whether this
    /// run published it (docs/reports.md#json-report).
    public var snapshot: SnapshotOutcome?
    /// For each set published as snapshots of its own, what its folder's link names
    /// after the run and whether this run published it (docs/reports.md#json-report).
    public var setSnapshots: [SnapshotOutcome] = []

    public init(
        command: RunCommand, manifest: String?, started: Date, finished: Date, items: [ItemResult], exitCode: ExitCode? = nil,
        error: ItemError? = nil
    ) {
        self.command = command.rawValue
        self.manifest = manifest
        self.started = started
        self.finished = finished
        storedItems = items
        self.exitCode = exitCode ?? ExitCode.forResults(items)
        self.error = error
    }

    /// A sync's report over the results it kept compact.
    init(command: RunCommand, manifest: String?, started: Date, finished: Date, items: ReportItems) {
        self.command = command.rawValue
        self.manifest = manifest
        self.started = started
        self.finished = finished
        storedItems = []
        compactItems = items
        var code = ExitCode.success
        items.forEachOutcome { status, _, error in
            code = ExitCode.combine([code, ExitCode.forResult(status: status, error: error)])
        }
        exitCode = code
    }

    /// Calls `body` with each item's status, bytes fetched and error, in order.
    private func forEachOutcome(_ body: (ItemStatus, ItemResult.Fetched, ItemError?) -> Void) {
        if let compactItems {
            compactItems.forEachOutcome(body)
        } else {
            for item in storedItems { body(item.status, item.fetched, item.error) }
        }
    }

    /// How many items the report has, without building them.
    var itemCount: Int { compactItems?.count ?? storedItems.count }

    /// Calls `body` with each item in order; a sync's report builds one at a time.
    func forEachItem(_ body: (ItemResult) throws -> Void) rethrows {
        if let compactItems { try compactItems.forEach(body) } else { try storedItems.forEach(body) }
    }

    public static func == (lhs: RunReport, rhs: RunReport) -> Bool {
        lhs.jgmirror == rhs.jgmirror && lhs.command == rhs.command && lhs.manifest == rhs.manifest && lhs.started == rhs.started
            && lhs.finished == rhs.finished && lhs.exitCode == rhs.exitCode && lhs.error == rhs.error
            && lhs.warnings == rhs.warnings
            && lhs.items == rhs.items && lhs.run == rhs.run && lhs.attempts == rhs.attempts
            && lhs.missingShards == rhs.missingShards
    }

    public var durationS: Double { finished.timeIntervalSince(started) }

    /// Counts per status, in the order of docs/reports.md#json-report.
    public struct Totals: Sendable, Equatable {
        public var items = 0
        public var downloaded = 0
        public var unchanged = 0
        public var failed = 0
        public var mismatch = 0
        public var unverified = 0
        public var interrupted = 0
        public var skipped = 0
        public var verified = 0
        public var missing = 0
        public var deleted = 0
        public var deleteSkipped = 0
        /// Files `--delete` kept for their grace period (`kept_removed`).
        public var keptRemoved = 0
        /// Optional files the server does not have (`not_served`).
        public var notServed = 0
        public var bytesDownloaded: Int64 = 0
        /// Body bytes received, written or not (`ItemResult.bytesReceived`).
        public var bytesReceived: Int64 = 0

    }

    public var totals: Totals {
        var totals = Totals()
        totals.items = itemCount
        // Bytes that earlier attempts of a shard fetched crossed the network too, though
        // their items gave way to the latest attempt's.
        for attempt in attempts where !attempt.latest {
            totals.bytesDownloaded = totals.bytesDownloaded.addingSaturated(attempt.bytesDownloaded)
            totals.bytesReceived = totals.bytesReceived.addingSaturated(attempt.bytesReceived)
        }
        forEachOutcome { status, bytes, _ in
            totals.bytesDownloaded = totals.bytesDownloaded.addingSaturated(bytes.downloaded)
            totals.bytesReceived = totals.bytesReceived.addingSaturated(bytes.received)
            switch status {
            case .downloaded: totals.downloaded += 1
            case .unchanged: totals.unchanged += 1
            case .failed: totals.failed += 1
            case .mismatch: totals.mismatch += 1
            case .unverified: totals.unverified += 1
            case .interrupted: totals.interrupted += 1
            case .skipped: totals.skipped += 1
            case .verified: totals.verified += 1
            case .missing: totals.missing += 1
            case .deleted: totals.deleted += 1
            case .deleteSkipped: totals.deleteSkipped += 1
            case .keptRemoved: totals.keptRemoved += 1
            case .notServed: totals.notServed += 1
            }
        }
        return totals
    }

    enum CodingKeys: String, CodingKey {
        case jgmirror, command, manifest, run, started, finished
        case durationS = "duration_s"
        case exitCode = "exit_code"
        case error, warnings, items, attempts, hosts, snapshot
        case missingShards = "missing_shards"
        case setSnapshots = "set_snapshots"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        jgmirror = try container.decode(String.self, forKey: .jgmirror)
        command = try container.decode(String.self, forKey: .command)
        manifest = try container.decodeIfPresent(String.self, forKey: .manifest)
        let startText = try container.decode(String.self, forKey: .started)
        let finishText = try container.decode(String.self, forKey: .finished)
        guard let started = RunReport.parseTimestamp(startText), let finished = RunReport.parseTimestamp(finishText) else {
            throw DecodingError.dataCorruptedError(forKey: .started, in: container, debugDescription: "bad timestamp")
        }
        self.started = started
        self.finished = finished
        exitCode = try container.decode(ExitCode.self, forKey: .exitCode)
        storedItems = try container.decode([ItemResult].self, forKey: .items)
        error = try container.decodeIfPresent(ItemError.self, forKey: .error)
        warnings = try container.decodeIfPresent([String].self, forKey: .warnings) ?? []
        run = try container.decodeIfPresent(RunIdentity.self, forKey: .run)
        attempts = try container.decodeIfPresent([ShardAttempt].self, forKey: .attempts) ?? []
        var missing: [ShardSpan] = []
        for text in try container.decodeIfPresent([String].self, forKey: .missingShards) ?? [] {
            guard let span = ShardSpan(parsing: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .missingShards, in: container, debugDescription: "not a shard I/N or I-J/N")
            }
            missing.append(span)
        }
        missingShards = missing
        hosts = try container.decodeIfPresent([HostSummary].self, forKey: .hosts) ?? []
        snapshot = try container.decodeIfPresent(SnapshotOutcome.self, forKey: .snapshot)
        setSnapshots = try container.decodeIfPresent([SnapshotOutcome].self, forKey: .setSnapshots) ?? []
    }

    static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    /// UTC with milliseconds (`2026-11-22T10:00:00.123Z`): a merge of shard reports
    /// takes its duration from these, and whole seconds rounded it away.
    static func timestamp(_ date: Date) -> String {
        date.formatted(withMilliseconds)
    }

    private static let withMilliseconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Reads a report's timestamp, with milliseconds or (as reports written before
    /// they had them) without.
    static func parseTimestamp(_ text: String) -> Date? {
        (try? Date(text, strategy: withMilliseconds)) ?? (try? Date(text, strategy: .iso8601))
    }

    /// The report as pretty JSON with keys in the documented order.
    public func jsonData() throws -> Data {
        var data = Data()
        writeJSON { data.append(contentsOf: $0.utf8) }
        return data
    }

    /// `jsonData()` handed to `write` in pieces of about 64 KiB, so that a large run's
    /// report is never held whole: as one string and its copies it had taken a
    /// 100,000-item sync's peak from 61 to 164 MiB.
    public func writeJSON(_ write: (String) -> Void) {
        // `json.rendered()`, without a tree of every item: the items are rendered one by one.
        var text = "{\n"
        for (key, value) in summaryMembers { text += "  " + JSONValue.quote(key) + ": " + value.rendered(indent: 1) + ",\n" }
        text += "  \"items\": "
        if itemCount == 0 {
            text += "[]"
        } else {
            text += "[\n"
            var first = true
            forEachItem { item in
                text += first ? "    " : ",\n    "
                first = false
                text += item.json.rendered(indent: 2)
                if text.utf8.count >= 64 << 10 {
                    write(text)
                    text.removeAll(keepingCapacity: true)
                }
            }
            text += "\n  ]"
        }
        text += "\n}"
        write(text)
    }

    /// Reads a report written by `jsonData()`.
    public static func decode(_ data: Data) throws -> RunReport {
        try JSONDecoder().decode(RunReport.self, from: data)
    }

    /// Shards name disjoint destinations: one found in two reports means a report
    /// given twice, or reports of different runs, and is counted once per report.
    static func repeatedDestinations(in reports: [RunReport]) -> String? {
        var earlier = Set<String>()
        var repeated = Set<String>()
        var first: String?
        for report in reports {
            var own = Set<String>()
            report.forEachItem { item in
                guard own.insert(item.dest).inserted, earlier.contains(item.dest) else { return }
                if repeated.insert(item.dest).inserted, first == nil { first = item.dest }
            }
            earlier.formUnion(own)
        }
        guard let first else { return nil }
        let count = repeated.count == 1 ? "1 destination appears" : "\(repeated.count) destinations appear"
        return "\(count) in more than one report (the first: '\(Rules.printable(first))'); each report's items are counted"
    }
}
