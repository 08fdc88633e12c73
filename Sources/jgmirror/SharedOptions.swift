import ArgumentParser
import Foundation
import JGMirror

/// Options `sync`, `verify` and `plan` share (docs/commands.md#options); the reports are
/// `OperatorOptionGroup`'s.
struct ManifestOptionGroup: ParsableArguments {
    @Argument(help: "The YAML manifest.")
    var manifest: String

    @Option(name: .customLong("tag"), help: "Select items carrying this tag (repeatable).")
    var tags: [String] = []

    @Option(name: .customLong("skip-tag"), help: "Drop items carrying this tag (repeatable).")
    var skipTags: [String] = []

    @Option(help: "Destination root (default: the manifest's root, else its folder).")
    var root: String?

    // `.unconditional`: a value such as "-1" is the option's value, so the range check
    // below can answer it (instead of "Missing value").
    @Option(
        parsing: .unconditional,
        help: "Take only shard I of N (I/N, 0-based), or 'auto': the Slurm array task or Kubernetes Job index.")
    var shard: String?

    @Option(
        name: .customLong("shard-count"), parsing: .unconditional,
        help: "Shard count for --shard auto (needed under Kubernetes; checked against a Slurm array).")
    var shardCount: WholeNumber?

    @Option(parsing: .unconditional, help: ArgumentHelp(Rules.connections.optionHelp("Override every item's connections")))
    var connections: WholeNumber?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Override every item's retries (\(Rules.retriesRow.bounds ?? ""))."))
    var retries: WholeNumber?

    @Option(name: .customLong("header"), help: "Extra request header 'K: V' for every item (repeatable).")
    var headers: [String] = []

    @Flag(name: .customLong("allow-file-urls"), help: "Accept file:// sources.")
    var allowFileURLs = false

    @Flag(name: .customLong("require-checksums"), help: "An item without a checksum is a manifest error.")
    var requireChecksums = false

    @Flag(
        name: .customLong("portable-names"),
        help: "Destinations that differ only in case (one file on macOS and Windows) are errors, not warnings.")
    var portableNames = false

    @Flag(help: "Less on stderr: only problems and the summary when not 0.")
    var quiet = false

    @Flag(help: "More on stderr: every item event.")
    var verbose = false

    func validate() throws {
        try checkRange("--connections", connections?.value, Rules.connections.range)
        try checkRange("--retries", retries?.value, Rules.retries)
        try checkRange("--shard-count", shardCount?.value, Rules.shardCount)
        _ = try parseHeaders(headers)
    }

    /// Writes the reports asked for (`outputs`) and ends the command with the report's code.
    func finish(_ report: RunReport, outputs: RunOutputs) throws(ArgumentParser.ExitCode) -> Never {
        try Terminal.finish(report, outputs: outputs, quiet: quiet)
    }

    /// Reports a run that stopped as a whole (in the reports `outputs` asks for, if
    /// any) and ends the command with its code.
    func fail(_ error: SyncError, command: RunCommand, outputs: RunOutputs?) throws(ArgumentParser.ExitCode) -> Never {
        try Terminal.fail(error, command: command, manifest: manifest, outputs: outputs)
    }

    var verbosity: ProgressRenderer.Verbosity { .init(quiet: quiet, verbose: verbose) }

    /// Loads the manifest and builds the plan; exits 2 with `FILE:LINE:COL` on error, or
    /// naming the tags when a tag filter selects no item. Prints the manifest's
    /// warnings. For `plan` and `verify` it reads the lists of `sets:` and `checksums:`
    /// first (through an engine set up by `transfer`, conditionally against the tree's
    /// cached copies); a sync reads them as it runs, on the run's own engine.
    func loadPlan(
        command: RunCommand, maxSize: Int64? = nil, outputs: RunOutputs? = nil, transfer: SyncOptions? = nil
    ) async throws(ArgumentParser.ExitCode) -> Plan {
        var manifestOptions = ManifestOptions(allowFileURLs: allowFileURLs, requireChecksums: requireChecksums)
        manifestOptions.environment = ProcessInfo.processInfo.environment
        manifestOptions.portableNames = portableNames
        var listOptions = transfer ?? SyncOptions()
        listOptions.allowFileURLs = allowFileURLs
        do {
            var manifest = try Manifest.load(path: manifest, options: manifestOptions)
            // Before any list is fetched: no output may replace what the run keeps.
            try outputs?.start(for: manifest, rootOverride: root)
            if !manifest.sets.isEmpty, command.readsListsWhilePlanning {
                let cache = ListCache(manifest: manifest, rootOverride: root, readOnly: true)
                do {
                    try await manifest.expandSets(options: listOptions, headers: try parseHeaders(headers), cache: cache)
                } catch let error as SyncError {
                    try fail(error, command: command, outputs: outputs)
                }
            }
            for warning in manifest.warnings {
                Terminal.warning(warning.errorDescription ?? warning.message)
            }
            var options = PlanOptions()
            options.maxSize = maxSize
            options.tags = tags
            options.skipTags = skipTags
            options.root = root
            options.connections = connections?.value
            options.retries = retries?.value
            options.headers = try parseHeaders(headers)
            options.shard = try resolveShard()
            // Consumed: the plan frees the manifest's items chunk by chunk as it resolves them.
            let plan = Plan(manifest: consume manifest, options: options)
            // A sync's sets are read as it runs: their items may carry the tags.
            if !plan.awaitsSets, let problem = plan.emptySelection { throw problem }
            // What `checksums:` lists give decides what plan shows and what verify
            // checks; sync applies them through its own engine and cache.
            guard command.readsListsWhilePlanning else { return plan }
            return try await applyingChecksumLists(to: plan, options: listOptions, command: command, outputs: outputs)
        } catch let code as ArgumentParser.ExitCode {
            throw code
        } catch let refusal as OutputTarget.Refusal {
            Terminal.error(refusal.message)
            throw ExitCode(JGMirror.ExitCode.usage)
        } catch let error as ManifestError {
            try fail(.manifest(error), command: command, outputs: outputs)
        } catch let error as UsageError {
            try fail(.usage(error), command: command, outputs: outputs)
        } catch {
            try fail(.usage(UsageError(error.localizedDescription)), command: command, outputs: outputs)
        }
    }

    private func applyingChecksumLists(
        to plan: Plan, options: SyncOptions, command: RunCommand, outputs: RunOutputs?
    ) async throws(ArgumentParser.ExitCode) -> Plan {
        var plan = plan
        do { try await plan.applyChecksumLists(options: options) } catch { try fail(error, command: command, outputs: outputs) }
        return plan
    }

    private func resolveShard() throws(UsageError) -> Shard? {
        try Shard.resolve(option: shard, count: shardCount?.value)
    }
}

/// Options for commands that transfer (`sync`, `get`).
struct TransferOptionGroup: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp(Rules.jobs.optionHelp()))
    var jobs = WholeNumber(Rules.jobs.defaultValue)

    @Option(name: .customLong("max-per-host"), parsing: .unconditional, help: ArgumentHelp(Rules.maxPerHost.optionHelp()))
    var maxPerHost = WholeNumber(Rules.maxPerHost.defaultValue)

    @Option(name: .customLong("max-rate"), help: "Overall bandwidth cap in bytes/s, e.g. 20M, 500k or 1.5MiB.")
    var maxRate: String?

    @Option(
        name: .customLong("max-size"),
        help: "Override every item's max_size: the most bytes accepted for a body of unknown length, e.g. 8GiB.")
    var maxSize: String?

    @Option(
        name: .customLong("min-free"),
        help: ArgumentHelp(
            "\(Rules.minFree.row.help), checked before a known length is reserved and while a body of unknown length arrives (default: \(Rules.minFree.row.defaultText); 0 keeps no reserve)."
        ))
    var minFree: String?

    @Flag(name: .customLong("no-resume"), help: "Ignore and delete resume state; a signal clears part files too.")
    var noResume = false

    @OptionGroup var trust: TrustOptionGroup

    @Option(
        name: .customLong("retry-delay"),
        help: ArgumentHelp(Rules.retryDelay.optionHelp()))
    var retryDelay = Rules.retryDelay.defaultText

    @Option(help: "Progress display: auto, bars, lines or none.")
    var progress: ProgressRenderer.Mode = .auto

    @Flag(
        name: .customLong("no-fsync"),
        help: "Skip fsync (disposable disks only): after a power cut, files placed shortly before may be empty or partial.")
    var noFsync = false

    func validate() throws {
        try checkRange("--jobs", jobs.value, Rules.jobs.range)
        try checkRange("--max-per-host", maxPerHost.value, Rules.maxPerHost.range)
        if let maxRate, !Rules.rate.contains(Units.parseRate(maxRate) ?? 0) {
            throw ValidationError("--max-rate takes 1 to 1EiB bytes per second such as 20M, 500k or 1.5MiB, not '\(maxRate)'")
        }
        if let maxSize, (Units.parseSize(maxSize) ?? 0) <= 0 {
            throw ValidationError("--max-size takes a size of more than 0 bytes such as 8GiB, not '\(maxSize)'")
        }
        if let minFree, Units.parseSize(minFree) == nil {
            throw ValidationError("--min-free takes a size such as 1GiB or 0, not '\(minFree)'")
        }
        for (option, text) in [("--max-size", maxSize), ("--min-free", minFree)] {
            if let size = text.flatMap(Units.parseSize), let problem = Rules.sizeProblem(size) {
                throw ValidationError("\(option) \(problem), not '\(text ?? "")'")
            }
        }
        guard let delay = Units.parseDuration(retryDelay) else {
            throw ValidationError("--retry-delay takes a duration such as \(Rules.retryDelay.defaultText)")
        }
        if let problem = Rules.retryDelay.problem(delay) { throw ValidationError("--retry-delay \(problem)") }
    }

    func syncOptions(allowFileURLs: Bool, requireChecksums: Bool) -> SyncOptions {
        var options = SyncOptions()
        options.jobs = jobs.value
        options.maxPerHost = maxPerHost.value
        options.maxRate = maxRate.flatMap(Units.parseRate)
        options.minFree = minFree.flatMap(Units.parseSize)
        options.resume = !noResume
        options.caCert = trust.caCert
        options.allowFileURLs = allowFileURLs
        options.requireChecksums = requireChecksums
        options.retryBaseDelay = Units.parseDuration(retryDelay) ?? Rules.retryDelay.defaultValue
        options.emitsEvents = progress != .none
        options.durable = !noFsync
        return options
    }

    /// `--max-size` in bytes, once `validate` has passed.
    var maxSizeBytes: Int64? { maxSize.flatMap(Units.parseSize) }
}

extension ProgressRenderer.Mode: ExpressibleByArgument {}

/// `--header` values as headers; refuses anything that is not one `Name: value` line,
/// and headers jgmirror sets itself (`Rules.headerProblem`).
func parseHeaders(_ lines: [String]) throws(ValidationError) -> [HTTPHeader] {
    try lines.map { line throws(ValidationError) in
        guard let header = HTTPHeader(line: line) else {
            throw ValidationError("--header takes one line 'Name: value', not \(line.debugDescription)")
        }
        if let problem = Rules.headerProblem(name: header.name) { throw ValidationError("--header: \(problem)") }
        return header
    }
}

/// A whole number option, read as the manifest reads one (`Units.parseWholeNumber`):
/// `+3`, `-0` and `0x10` are refused, not taken for 3, 0 and 16 as `Int` takes them. A
/// minus sign is read, so that `checkRange` tells the range a negative number is
/// outside of.
struct WholeNumber: ExpressibleByArgument, Sendable {
    var value: Int

    init(_ value: Int) { self.value = value }

    init?(argument: String) {
        guard let value = Units.parseWholeNumber(argument, negative: true) else { return nil }
        self.value = value
    }

    var defaultValueDescription: String { String(value) }
}

/// `--keep-removed D`: a duration as the manifest's `keep_removed` takes it, within its
/// bounds (docs/deletions.md#grace-period).
struct KeepRemoved: ExpressibleByArgument, Sendable {
    var seconds: Double

    init?(argument: String) {
        guard let seconds = Units.parseDuration(argument), Rules.keepRemoved.problem(seconds) == nil else { return nil }
        self.seconds = seconds
    }

    var defaultValueDescription: String { "\(seconds)s" }
}

/// Refuses a number outside `range`, naming the option and the range.
func checkRange(_ option: String, _ value: Int?, _ range: ClosedRange<Int>) throws(ValidationError) {
    if let value, let problem = Rules.problem(value, in: range) { throw ValidationError("\(option) \(problem)") }
}

extension ProgressRenderer.Verbosity {
    init(quiet: Bool, verbose: Bool) { self = quiet ? .quiet : verbose ? .verbose : .normal }
}
