import Foundation

extension RunReport {
    /// Combines shard reports into one (docs/reports.md#merging-shard-reports).
    ///
    /// Reports that name their run must be of one manifest, with the same filters
    /// and shard count, or the merge is a usage error: their items would not add up
    /// to one mirror. Of each shard, the attempt that started last gives the items
    /// (a requeued task's report replaces the killed one's); every attempt is listed
    /// in `attempts`, and the bytes of the earlier ones are counted in the totals. A
    /// shard with no report makes the merged report incomplete: exit 1, error
    /// `shard_missing`. Reports from before runs were named are merged as they come,
    /// with a warning. The `hosts` sections of every attempt add up
    /// (`HostSummary.merged`): per origin, what all of them asked of it, and the worst
    /// state any of them left it in.
    ///
    /// - Parameter names: how to call each report in an error (its path), in order.
    public static func merge(_ reports: [RunReport], names: [String]? = nil) throws(UsageError) -> RunReport {
        let given = try Given(reports, names: names ?? reports.indices.map { "report \($0 + 1)" })
        let (named, unnamed) = (given.named, given.unnamed)
        var warnings = given.warnings
        if !unnamed.isEmpty { warnings.append(Self.unnamedWarning(unnamed.map(\.name))) }
        // Of each shard, the attempt that started last.
        var latest: [Int: Int] = [:]
        for (position, attempt) in named.enumerated() {
            let index = attempt.run.effectiveShard.index
            if let previous = latest[index], named[previous].report.started >= attempt.report.started { continue }
            latest[index] = position
        }
        // Items: each shard's latest attempt, in shard order, then the unnamed reports.
        let parts = latest.sorted { $0.key < $1.key }.map { named[$0.value].report } + unnamed.map(\.report)
        let identity = named.first?.run
        let items = parts.flatMap(\.items)
        let everything = named.map(\.report) + unnamed.map(\.report)
        let started = everything.map(\.started).min() ?? Date()
        let finished = everything.map(\.finished).max() ?? started
        let missing = identity.map { ShardSpan.missing(from: latest.keys, count: $0.effectiveShard.count) } ?? []
        var codes = parts.map(\.exitCode) + [ExitCode.forResults(items)]
        if !missing.isEmpty { codes.append(ErrorCode.shardMissing.exitCode) }
        var merged = RunReport(
            command: reports.first.flatMap { RunCommand(rawValue: $0.command) } ?? .sync,
            manifest: parts.first?.manifest ?? reports.first?.manifest,
            started: started, finished: finished, items: items, exitCode: ExitCode.combine(codes))
        if let identity {
            merged.run = RunIdentity(
                manifestSHA256: identity.manifestSHA256, tags: identity.tags, skipTags: identity.skipTags,
                shardCount: identity.effectiveShard.count)
        }
        merged.attempts = attempts(of: named, latest: latest)
        merged.hosts = HostSummary.merged(everything.map(\.hosts))
        merged.missingShards = missing
        if !missing.isEmpty {
            let list = missing.map(\.description).joined(separator: ", ")
            let one = missing.count == 1 && missing[0].size == 1
            merged.error = ItemError(
                code: .shardMissing, message: "no report of shard\(one ? "" : "s") \(list): the merged report is incomplete")
        } else {
            merged.error = parts.compactMap(\.error).first
        }
        merged.warnings = warnings + parts.flatMap(\.warnings)
        if let repeated = repeatedDestinations(in: parts) { merged.warnings.append(repeated) }
        return merged
    }

    /// The reports given to `merge`, sorted out: those that name their run, each
    /// attempt once, and those from before runs were named.
    private struct Given {
        var named: [(report: RunReport, run: RunIdentity)] = []
        var unnamed: [(name: String, report: RunReport)] = []
        /// One line for each attempt given twice.
        var warnings: [String] = []

        /// Throws when a report names another run than the first that names one.
        init(_ reports: [RunReport], names: [String]) throws(UsageError) {
            var seen = Set<String>()
            for (name, report) in zip(names, reports) {
                guard let run = report.run else {
                    unnamed.append((name, report))
                    continue
                }
                if let first = named.first?.run, !first.isSameRun(as: run) {
                    let firstName = names[reports.firstIndex { $0.run != nil } ?? 0]
                    throw UsageError(
                        "\(name) is a report of another run than \(firstName): \(RunReport.difference(first, run)); merge the reports of one run"
                    )
                }
                // The same file named twice is one attempt, not two.
                let key = "\(run.effectiveShard) \(run.host ?? "") \(RunReport.timestamp(report.started))"
                guard seen.insert(key).inserted else {
                    warnings.append(
                        "\(name) repeats an attempt already given (shard \(run.effectiveShard), started \(RunReport.timestamp(report.started))); read once"
                    )
                    continue
                }
                named.append((report, run))
            }
        }
    }

    /// Every attempt of every shard, in shard order and then by start, the latest of
    /// each marked (`latest`: its position in `named`, by shard index).
    private static func attempts(of named: [(report: RunReport, run: RunIdentity)], latest: [Int: Int]) -> [ShardAttempt] {
        var attempts = named.enumerated().map { position, attempt in
            let totals = attempt.report.totals
            return ShardAttempt(
                shard: attempt.run.effectiveShard, host: attempt.run.host, started: attempt.report.started,
                finished: attempt.report.finished, exitCode: attempt.report.exitCode, items: totals.items,
                bytesDownloaded: totals.bytesDownloaded, bytesReceived: totals.bytesReceived,
                latest: latest[attempt.run.effectiveShard.index] == position)
        }
        attempts.sort { ($0.shard.index, $0.started) < ($1.shard.index, $1.started) }
        return attempts
    }

    /// One line for the reports that do not name their run: each path once, the
    /// first three of them.
    private static func unnamedWarning(_ names: [String]) -> String {
        var seen = Set<String>()
        let distinct = names.filter { seen.insert($0).inserted }
        var which = distinct.prefix(3).joined(separator: ", ")
        if distinct.count > 3 { which += " and \(distinct.count - 3) more" }
        let (verb, pronoun) = distinct.count == 1 ? ("does", "its") : ("do", "their")
        return
            "\(which) \(verb) not name \(pronoun) run (written before jgmirror recorded it): merged without checking manifest, shards or attempts"
    }

    /// What tells two runs apart, for the merge's error.
    private static func difference(_ a: RunIdentity, _ b: RunIdentity) -> String {
        if a.manifestSHA256 != b.manifestSHA256 {
            return "manifest sha256 \(a.manifestSHA256 ?? "none") and \(b.manifestSHA256 ?? "none")"
        }
        if a.effectiveShard.count != b.effectiveShard.count {
            return "\(a.effectiveShard.count) and \(b.effectiveShard.count) shards"
        }
        return "filters --tag \(a.tags) --skip-tag \(a.skipTags) and --tag \(b.tags) --skip-tag \(b.skipTags)"
    }
}
