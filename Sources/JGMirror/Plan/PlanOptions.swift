import Foundation

/// Command-line choices that shape the queue (SPEC §2).
public struct PlanOptions: Sendable {
    /// Keep only items that carry any of these tags (empty: all).
    public var tags: [String] = []
    /// Drop items that carry any of these tags.
    public var skipTags: [String] = []
    /// Override every item's connection count.
    public var connections: Int?
    /// Override every item's retry count.
    public var retries: Int?
    /// Destination root; default the manifest's `root`, else its folder.
    public var root: String?
    /// Take only this shard of the items.
    public var shard: Shard?
    /// Extra headers for every item (`--header`), after the manifest's.
    public var headers: [HTTPHeader] = []
    /// Override every item's `max_size` (`--max-size`).
    public var maxSize: Int64?

    public init() {}
}

/// A slice of the items by a stable hash of their destination (SPEC §2 `--shard`).
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 0-based index of this shard.
    public var index: Int
    /// Number of shards.
    public var count: Int

    public init(index: Int, count: Int) throws(UsageError) {
        guard count >= 1 else { throw UsageError("shard \(index)/\(count) is out of range: the count N must be at least 1") }
        guard index >= 0, index < count else {
            throw UsageError("shard \(index)/\(count) is out of range: the index I must be from 0 to \(count - 1)")
        }
        self.index = index
        self.count = count
    }

    /// Parses `I/N`.
    public init(parsing text: String) throws(UsageError) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            throw UsageError("--shard takes I/N (for example 0/4) or 'auto', not '\(text)'")
        }
        try self.init(index: index, count: count)
    }

    /// The shard a job scheduler gives this process: Kubernetes Indexed Jobs set
    /// `JOB_COMPLETION_INDEX`, Slurm job arrays `SLURM_ARRAY_TASK_ID`.
    public static func automatic(count: Int?, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(UsageError) -> Shard
    {
        guard let count else { throw UsageError("--shard auto needs --shard-count N") }
        for variable in ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"] {
            if let text = environment[variable] {
                guard let index = Int(text) else { throw UsageError("\(variable)='\(text)' is not a number") }
                return try Shard(index: index, count: count)
            }
        }
        throw UsageError("--shard auto: neither JOB_COMPLETION_INDEX nor SLURM_ARRAY_TASK_ID is set")
    }

    /// Whether the item with destination `dest` belongs to this shard.
    public func contains(dest: String) -> Bool {
        Int(StableHash.fnv1a64(dest) % UInt64(count)) == index
    }

    public var description: String { "\(index)/\(count)" }
}

/// A wrong command line: exit 2 (SPEC §9).
public struct UsageError: LocalizedError, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    /// Control characters are shown escaped, never written raw to a terminal.
    public var errorDescription: String? { Rules.printable(message) }

    /// `sync --delete` under `--shard`, `--tag` or `--skip-tag` (SPEC §10).
    public static let deleteUnderFilter = UsageError(
        "--delete cannot be combined with --shard, --tag or --skip-tag: the run does not see the whole manifest, so it cannot tell which files no item produces"
    )

    /// `sync --delete` of a manifest that selects no item (SPEC §10): it would empty the
    /// root, which a templating mistake is far likelier to ask for than an operator.
    public static let deleteEverything = UsageError(
        "--delete with a manifest that names no item would delete every file under the root; nothing was deleted or fetched"
    )
}
