import Foundation

/// What happened to one item (docs/sync.md, docs/reports.md#item-status).
public enum ItemStatus: String, Sendable, Codable, CaseIterable {
    /// Fetched, verified and placed this run (a `link:` item: made or changed).
    case downloaded
    /// Already on disk with the right SHA-256; nothing was sent (a `link:` item: already
    /// a link to its target).
    case unchanged
    /// Present (fetched or already there) but the manifest gives no checksum.
    case unverified
    /// Could not be fetched after retries and mirrors.
    case failed
    /// Fetched bytes did not match the checksum (sync), or the file on disk does not (verify).
    case mismatch
    /// Stopped by SIGINT/SIGTERM or a cancel; resume state kept.
    case interrupted
    /// Never started (`--fail-fast`, or a cancel before its turn).
    case skipped
    /// `verify`: present and matching.
    case verified
    /// `verify`: not on disk.
    case missing
    /// `sync --delete`: a file under the root that no item produces, or a link a former
    /// `link:` item placed, removed.
    case deleted
    /// `sync --delete`: a file no item produces, left in place because the run was not
    /// clean (an item or a list failed, or it was interrupted); the error says why.
    case deleteSkipped = "delete_skipped"
    /// `sync --delete`: a file no item produces any more, kept for its grace period
    /// (`keep_removed`); `kept_until` says when the first `--delete` run after may
    /// delete it (docs/deletions.md#grace-period).
    case keptRemoved = "kept_removed"
    /// An optional file the server does not have (404 or 410): a form of an apt index
    /// that Release lists and the archive does not serve, while another form of it is
    /// there (docs/publishing.md#ordered). No failure; nothing is placed for it.
    case notServed = "not_served"

    /// Whether the status needs the operator's attention, whatever the verbosity.
    public var isProblem: Bool {
        self == .failed || self == .mismatch || self == .missing || self == .interrupted || self == .deleteSkipped
    }

    /// An item the run found as it should be and left alone: what a display shows
    /// only when asked to be verbose.
    public var isSettled: Bool { self == .unchanged || self == .verified || self == .skipped }
}

/// An item's error in a report: `{"code": "http_404", "message": "…"}`.
public struct ItemError: Sendable, Codable, Equatable {
    public var code: ErrorCode
    public var message: String

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    /// A failure of this machine rather than the network (exit 4).
    public var isLocal: Bool { code.isLocal }
}

/// One item of the report, in the order docs/reports.md#json-report lists the fields.
public struct ItemResult: Sendable, Decodable, Equatable {
    public var dest: String
    public var url: String
    public var tag: Int?
    public var tags: [String]
    public var status: ItemStatus
    /// The file's length, when known.
    public var bytes: Int64?
    /// Bytes written this run (a discarded pass's too).
    public var bytesDownloaded: Int64
    /// Body bytes received this run: `bytesDownloaded` and every byte the engine
    /// refused or discarded (past a cut, an error's body, a pass started over).
    public var bytesReceived: Int64
    public var resumedFrom: Int64
    public var connections: Int
    public var attempts: Int
    public var durationS: Double
    public var sha256Expected: String?
    public var sha256Actual: String?
    /// Set for items checked by SHA-512 (`sha512:`, SHA512SUMS lists); the report
    /// shows `sha512_expected` and `sha512_actual` only for them.
    public var sha512Expected: String?
    public var sha512Actual: String?
    public var error: ItemError?
    /// Set when TLS verification was off for this item (`insecure: true`).
    public var insecure: Bool
    /// Why resume state was discarded or the download restarted, when it was.
    public var note: String?
    /// For a `link:` item, the symlink's target (its `url` is empty); the report shows
    /// `link` only for such items.
    public var link: String?
    /// For a `kept_removed` file, when it may be deleted (UTC, `2026-11-28T05:20:00Z`);
    /// the report shows `kept_until` only for such files.
    public var keptUntil: String?

    public init(
        dest: String, url: String, tag: Int? = nil, tags: [String] = [], status: ItemStatus, bytes: Int64? = nil,
        bytesDownloaded: Int64 = 0, bytesReceived: Int64? = nil, resumedFrom: Int64 = 0, connections: Int = 0, attempts: Int = 0,
        durationS: Double = 0,
        sha256Expected: String? = nil, sha256Actual: String? = nil, sha512Expected: String? = nil, sha512Actual: String? = nil,
        error: ItemError? = nil, insecure: Bool = false,
        note: String? = nil, link: String? = nil, keptUntil: String? = nil
    ) {
        self.dest = dest
        self.url = url
        self.tag = tag
        self.tags = tags
        self.status = status
        self.bytes = bytes
        self.bytesDownloaded = bytesDownloaded
        self.bytesReceived = bytesReceived ?? bytesDownloaded
        self.resumedFrom = resumedFrom
        self.connections = connections
        self.attempts = attempts
        self.durationS = durationS
        self.sha256Expected = sha256Expected
        self.sha256Actual = sha256Actual
        self.sha512Expected = sha512Expected
        self.sha512Actual = sha512Actual
        self.error = error
        self.insecure = insecure
        self.note = note
        self.link = link
        self.keptUntil = keptUntil
    }

    enum CodingKeys: String, CodingKey {
        case dest, url, tag, tags, status, bytes
        case bytesDownloaded = "bytes_downloaded"
        case bytesReceived = "bytes_received"
        case resumedFrom = "resumed_from"
        case connections, attempts
        case durationS = "duration_s"
        case sha256Expected = "sha256_expected"
        case sha256Actual = "sha256_actual"
        case sha512Expected = "sha512_expected"
        case sha512Actual = "sha512_actual"
        case error, insecure, note, link
        case keptUntil = "kept_until"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        dest = try container.decode(String.self, forKey: .dest)
        url = try container.decode(String.self, forKey: .url)
        tag = try container.decodeIfPresent(Int.self, forKey: .tag)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
        status = try container.decode(ItemStatus.self, forKey: .status)
        bytes = try container.decodeIfPresent(Int64.self, forKey: .bytes)
        bytesDownloaded = try container.decodeIfPresent(Int64.self, forKey: .bytesDownloaded) ?? 0
        // Reports before bytes_received counted only what was written.
        bytesReceived = try container.decodeIfPresent(Int64.self, forKey: .bytesReceived) ?? bytesDownloaded
        resumedFrom = try container.decodeIfPresent(Int64.self, forKey: .resumedFrom) ?? 0
        connections = try container.decodeIfPresent(Int.self, forKey: .connections) ?? 0
        attempts = try container.decodeIfPresent(Int.self, forKey: .attempts) ?? 0
        durationS = try container.decodeIfPresent(Double.self, forKey: .durationS) ?? 0
        sha256Expected = try container.decodeIfPresent(String.self, forKey: .sha256Expected)
        sha256Actual = try container.decodeIfPresent(String.self, forKey: .sha256Actual)
        sha512Expected = try container.decodeIfPresent(String.self, forKey: .sha512Expected)
        sha512Actual = try container.decodeIfPresent(String.self, forKey: .sha512Actual)
        error = try container.decodeIfPresent(ItemError.self, forKey: .error)
        insecure = try container.decodeIfPresent(Bool.self, forKey: .insecure) ?? false
        note = try container.decodeIfPresent(String.self, forKey: .note)
        link = try container.decodeIfPresent(String.self, forKey: .link)
        keptUntil = try container.decodeIfPresent(String.self, forKey: .keptUntil)
        for (key, count) in [
            (CodingKeys.bytes, bytes ?? 0), (.bytesDownloaded, bytesDownloaded), (.bytesReceived, bytesReceived),
            (.resumedFrom, resumedFrom),
        ]
        where !(0...Rules.maximumSize).contains(count) {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "must be a byte count from 0 to 1EiB, not \(count)")
        }
    }
}

extension ItemResult {
    /// What an item's requests brought this run: written, and received.
    struct Fetched {
        var downloaded: Int64
        var received: Int64
    }

    var fetched: Fetched { Fetched(downloaded: bytesDownloaded, received: bytesReceived) }
}

extension Int64 {
    /// `self + other`, held at `Int64.max`: totals over reports from anywhere (`report
    /// merge`) never overflow.
    func addingSaturated(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
