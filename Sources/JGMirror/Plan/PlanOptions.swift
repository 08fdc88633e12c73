import Foundation

/// Command-line choices that shape the queue (docs/commands.md#selecting-items).
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

/// A slice of the items by a stable hash of their destination (docs/commands.md#selecting-items).
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 0-based index of this shard.
    public var index: Int
    /// Number of shards.
    public var count: Int

    public init(index: Int, count: Int) throws(UsageError) {
        guard Rules.shardCount.contains(count) else {
            throw UsageError(
                "shard \(index)/\(count) is out of range: the count N must be from \(Rules.shardCount.lowerBound) to \(Rules.shardCount.upperBound)"
            )
        }
        guard index >= 0, index < count else {
            throw UsageError("shard \(index)/\(count) is out of range: the index I must be from 0 to \(count - 1)")
        }
        self.index = index
        self.count = count
    }

    /// Parses `I/N`.
    public init(parsing text: String) throws(UsageError) {
        let parts = text.split(separator: "/")
        // A minus sign is read, so that `-1/2` is told the range it is out of.
        guard parts.count == 2, let index = Units.parseWholeNumber(String(parts[0]), negative: true),
            let count = Units.parseWholeNumber(String(parts[1]), negative: true)
        else {
            throw UsageError("--shard takes I/N (for example 0/4) or 'auto', not '\(text)'")
        }
        try self.init(index: index, count: count)
    }

    /// The shard `--shard` and `--shard-count` name (docs/commands.md#selecting-items,
    /// docs/scale-out.md): `I/N`, `auto`, or none. `--shard-count` goes only with `auto`: beside
    /// `I/N` it would be a second, possibly different, N.
    public static func resolve(
        option: String?, count: Int?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> Shard? {
        guard let option else {
            if let count { throw UsageError("--shard-count \(count) needs --shard auto") }
            return nil
        }
        if option == "auto" { return try automatic(count: count, environment: environment) }
        if count != nil {
            throw UsageError("--shard-count goes only with --shard auto; --shard \(option) already names the count")
        }
        return try Shard(parsing: option)
    }

    /// The shard a job scheduler gives this process (docs/scale-out.md#slurm,
    /// docs/scale-out.md#kubernetes). Kubernetes Indexed Jobs set `JOB_COMPLETION_INDEX` but not
    /// the completions, so `count` is needed. Slurm job arrays set `SLURM_ARRAY_TASK_ID` with the
    /// array's `_MIN`, `_MAX`, `_COUNT` and `_STEP`: an array from 1 (`--array=1-4`) or with a step
    /// (`--array=0-6:2`) maps onto shards 0…N-1 in order, and `count`, when given,
    /// must agree. Both engines' variables at once is an error rather than a guess.
    public static func automatic(count: Int?, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(UsageError) -> Shard
    {
        let kubernetes = environment["JOB_COMPLETION_INDEX"]
        let slurm = environment["SLURM_ARRAY_TASK_ID"]
        if kubernetes != nil, slurm != nil {
            throw UsageError(
                "--shard auto: both JOB_COMPLETION_INDEX (Kubernetes) and SLURM_ARRAY_TASK_ID (Slurm) are set; unset the one that does not apply or give --shard I/N"
            )
        }
        if let kubernetes {
            let index = try number("JOB_COMPLETION_INDEX", kubernetes)
            guard let count else {
                throw UsageError("--shard auto with JOB_COMPLETION_INDEX needs --shard-count N (the Job's completions)")
            }
            return try Shard(index: index, count: count)
        }
        guard let slurm else {
            throw UsageError("--shard auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set")
        }
        let task = try number("SLURM_ARRAY_TASK_ID", slurm)
        guard let array = try SlurmArray(environment: environment) else {
            // A Slurm without the array's bounds (or a hand-made environment): the task
            // ID is the index, and the count must be given.
            guard let count else {
                throw UsageError(
                    "--shard auto: SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_MIN/COUNT; give --shard-count N")
            }
            return try Shard(index: task, count: count)
        }
        if let count, count != array.count {
            throw UsageError(
                "--shard-count \(count) disagrees with the Slurm array, which has \(array.count) tasks (SLURM_ARRAY_TASK_COUNT)")
        }
        return try Shard(index: try array.index(of: task), count: array.count)
    }

    /// Reads a variable that must hold a whole number.
    private static func number(_ variable: String, _ text: String) throws(UsageError) -> Int {
        guard let value = Units.parseWholeNumber(text, negative: true) else {
            throw UsageError("--shard auto: \(variable)='\(text)' is not a number")
        }
        return value
    }

    /// A Slurm job array as its variables describe it: `min`, `min + step`, … `max`.
    struct SlurmArray {
        var min: Int
        var step: Int
        var count: Int

        /// Nil when Slurm gave no `SLURM_ARRAY_TASK_MIN` and `_COUNT`.
        init?(environment: [String: String]) throws(UsageError) {
            guard let minText = environment["SLURM_ARRAY_TASK_MIN"], let countText = environment["SLURM_ARRAY_TASK_COUNT"]
            else { return nil }
            min = try Shard.number("SLURM_ARRAY_TASK_MIN", minText)
            count = try Shard.number("SLURM_ARRAY_TASK_COUNT", countText)
            step =
                try environment["SLURM_ARRAY_TASK_STEP"].map { text throws(UsageError) in
                    try Shard.number("SLURM_ARRAY_TASK_STEP", text)
                } ?? 1
            guard count >= 1, step >= 1 else {
                throw UsageError("--shard auto: a Slurm array of \(count) tasks with step \(step) cannot be sharded")
            }
            // A list such as --array=0,2,7 is no evenly spaced range: its tasks have no
            // one mapping onto 0…N-1 that every task would compute alike.
            if let maxText = environment["SLURM_ARRAY_TASK_MAX"] {
                let max = try Shard.number("SLURM_ARRAY_TASK_MAX", maxText)
                guard max >= min, (max - min) % step == 0, (max - min) / step + 1 == count else {
                    throw UsageError(
                        "--shard auto: the Slurm array \(min)-\(max) with step \(step) does not have \(count) evenly spaced tasks; use a range such as --array=0-\(count - 1)"
                    )
                }
            }
        }

        /// The shard index of array task `task`.
        func index(of task: Int) throws(UsageError) -> Int {
            let offset = task - min
            guard offset >= 0, offset % step == 0, offset / step < count else {
                throw UsageError(
                    "--shard auto: SLURM_ARRAY_TASK_ID=\(task) is not one of the array's tasks (\(min), step \(step), \(count) tasks)"
                )
            }
            return offset / step
        }
    }

    /// The whole manifest as one shard: what a run without `--shard` covers.
    static let whole = Shard(checked: 0, count: 1)

    /// For values known to be in range.
    private init(checked index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Whether the item with destination `dest` belongs to this shard.
    public func contains(dest: String) -> Bool {
        Int(StableHash.fnv1a64(dest) % UInt64(count)) == index
    }

    public var description: String { "\(index)/\(count)" }
}
