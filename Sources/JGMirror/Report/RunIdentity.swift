import Foundation

/// Which run a report belongs to (docs/reports.md#the-run, docs/reports.md#merging-shard-reports):
/// what `report merge` compares, so that it never combines shards of different manifests, filters
/// or counts, tells a shard's attempts apart, and can name a shard that has no report.
public struct RunIdentity: Sendable, Equatable, Decodable {
    /// SHA-256 of the manifest file's bytes, before any filter; nil for a manifest
    /// that was never a file (the library's `Manifest.parse`).
    public var manifestSHA256: String?
    /// `--tag` filters.
    public var tags: [String]
    /// `--skip-tag` filters.
    public var skipTags: [String]
    /// The shard the run took; nil for the whole manifest, which is one shard of one.
    public var shard: Shard?
    /// A merged report's shard count; nil in a single run's report, where `shard` says it.
    public var shardCount: Int?
    /// The machine of the attempt; with the report's `started`, it tells attempts apart.
    public var host: String?

    public init(
        manifestSHA256: String?, tags: [String] = [], skipTags: [String] = [], shard: Shard? = nil, shardCount: Int? = nil,
        host: String? = nil
    ) {
        self.manifestSHA256 = manifestSHA256
        self.tags = tags
        self.skipTags = skipTags
        self.shard = shard
        self.shardCount = shardCount
        self.host = host
    }

    /// The shard this report stands for: a run of the whole manifest is shard 0 of 1.
    var effectiveShard: Shard { shard ?? Shard.whole }

    /// Whether `other` is a run of the same manifest with the same filters and count.
    func isSameRun(as other: RunIdentity) -> Bool {
        manifestSHA256 == other.manifestSHA256 && tags == other.tags && skipTags == other.skipTags
            && effectiveShard.count == other.effectiveShard.count
    }

    enum CodingKeys: String, CodingKey {
        case manifestSHA256 = "manifest_sha256"
        case tags
        case skipTags = "skip_tags"
        case shard
        case shardCount = "shard_count"
        case host
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        manifestSHA256 = try container.decodeIfPresent(String.self, forKey: .manifestSHA256)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
        skipTags = try container.decodeIfPresent([String].self, forKey: .skipTags) ?? []
        if let text = try container.decodeIfPresent(String.self, forKey: .shard) {
            do { shard = try Shard(parsing: text) } catch {
                throw DecodingError.dataCorruptedError(forKey: .shard, in: container, debugDescription: Self.shardProblem(error))
            }
        }
        shardCount = try container.decodeIfPresent(Int.self, forKey: .shardCount)
        host = try container.decodeIfPresent(String.self, forKey: .host)
    }

    /// Why a report's shard is refused: `shard 0/1000000000 is out of range: …`, or
    /// that it is not `I/N` at all.
    static func shardProblem(_ error: UsageError) -> String {
        error.message.hasPrefix("shard ") ? error.message : "not a shard I/N"
    }

    var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("manifest_sha256", .string(manifestSHA256)), ("tags", .array(tags.map { .string($0) })),
            ("skip_tags", .array(skipTags.map { .string($0) })), ("shard", .string(shard?.description)),
        ]
        if let shardCount { members.append(("shard_count", .int(shardCount))) }
        members.append(("host", .string(host)))
        return .object(members)
    }

    /// This machine's name, as `gethostname` gives it (no DNS lookup, unlike
    /// `ProcessInfo.hostName`, which a cluster node without a resolver waits on).
    public static var localHost: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// One shard report that went into a merged report (docs/reports.md#merging-shard-reports): the
/// latest attempt of each shard gives the items; earlier ones are listed, and their bytes counted.
public struct ShardAttempt: Sendable, Equatable, Decodable {
    public var shard: Shard
    public var host: String?
    public var started: Date
    public var finished: Date
    public var exitCode: ExitCode
    /// How many items the attempt reported.
    public var items: Int
    public var bytesDownloaded: Int64
    /// Body bytes the attempt received, written or not.
    public var bytesReceived: Int64
    /// Whether this is the shard's latest attempt, whose items the merged report holds.
    public var latest: Bool

    public init(
        shard: Shard, host: String?, started: Date, finished: Date, exitCode: ExitCode, items: Int, bytesDownloaded: Int64,
        bytesReceived: Int64? = nil, latest: Bool
    ) {
        self.shard = shard
        self.host = host
        self.started = started
        self.finished = finished
        self.exitCode = exitCode
        self.items = items
        self.bytesDownloaded = bytesDownloaded
        self.bytesReceived = bytesReceived ?? bytesDownloaded
        self.latest = latest
    }

    enum CodingKeys: String, CodingKey {
        case shard, host, started, finished
        case exitCode = "exit_code"
        case items
        case bytesDownloaded = "bytes_downloaded"
        case bytesReceived = "bytes_received"
        case latest
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        do { shard = try Shard(parsing: try container.decode(String.self, forKey: .shard)) } catch let error as UsageError {
            throw DecodingError.dataCorruptedError(
                forKey: .shard, in: container, debugDescription: RunIdentity.shardProblem(error))
        }
        host = try container.decodeIfPresent(String.self, forKey: .host)
        guard let started = RunReport.parseTimestamp(try container.decode(String.self, forKey: .started)),
            let finished = RunReport.parseTimestamp(try container.decode(String.self, forKey: .finished))
        else { throw DecodingError.dataCorruptedError(forKey: .started, in: container, debugDescription: "bad timestamp") }
        self.started = started
        self.finished = finished
        exitCode = try container.decode(ExitCode.self, forKey: .exitCode)
        items = try container.decode(Int.self, forKey: .items)
        bytesDownloaded = try container.decode(Int64.self, forKey: .bytesDownloaded)
        bytesReceived = try container.decodeIfPresent(Int64.self, forKey: .bytesReceived) ?? bytesDownloaded
        latest = try container.decode(Bool.self, forKey: .latest)
    }

    var json: JSONValue {
        .object([
            ("shard", .string(shard.description)), ("host", .string(host)), ("started", .string(RunReport.timestamp(started))),
            ("finished", .string(RunReport.timestamp(finished))), ("exit_code", .int(Int64(exitCode.rawValue))),
            ("items", .int(items)), ("bytes_downloaded", .int(bytesDownloaded)),
            ("bytes_received", .int(bytesReceived)), ("latest", .bool(latest)),
        ])
    }
}
