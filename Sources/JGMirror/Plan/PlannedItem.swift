/// One item of the queue with every option resolved: what the engine fetches and
/// where the verified bytes land.
public struct PlannedItem: Sendable, Identifiable {
    /// Position in the manifest (0-based), stable across filters.
    public var id: Int
    /// Primary URL.
    public var url: String
    /// Other URLs with the same bytes, tried in turn.
    public var mirrors: [String]
    /// Destination relative to the root, normalised.
    public var dest: String
    /// Absolute destination root.
    public var root: String
    /// Absolute destination path (computed: storing it cost 100 bytes per item).
    public var path: String { root + "/" + dest }
    /// Expected SHA-256 (lower-case hex), when known.
    public var sha256: String?
    /// Expected SHA-512 (lower-case hex), when the manifest or a SHA512SUMS list gives one.
    public var sha512: String? = nil
    /// Expected length; a server that disagrees fails the item.
    public var size: Int64?
    public var connections: Int
    public var retries: Int
    public var minSegment: Int64
    /// Stall timeout in seconds.
    public var timeout: Double
    public var headers: [HTTPHeader]
    public var redact: [String]
    public var tags: [String]
    /// Numeric tag echoed in reports.
    public var tag: Int?
    public var insecure: Bool
    /// Headers go along to any origin a redirect leads to, not only the item's own.
    public var forwardHeaders = false
    /// The most bytes accepted for a body of unknown length or announced for one of
    /// known length (`max_size`, `--max-size`).
    public var maxSize: Int64?
    /// Where the item is in the manifest, for errors found after planning.
    public var location: SourceLocation
    /// Where its `sha256` is, when inline.
    public var sha256Location: SourceLocation?
    /// Set when the item must fail without a transfer: its checksums list failed its
    /// signature check.
    public var failure: ItemError? = nil

    /// Cleans secrets from text about this item.
    public var redactor: Redactor { Redactor(headers: headers, redact: redact) }
    /// Whether a checksum decides the item's content (else it is `unverified`).
    public var hasChecksum: Bool { sha256 != nil || sha512 != nil }
    /// The URL as reports and logs may show it.
    public var displayURL: String { Redactor.redactURL(url) }
}
