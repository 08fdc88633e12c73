/// A parsed and validated manifest (SPEC §3): what to mirror, where, and how.
public struct Manifest: Sendable {
    /// The manifest's path (or the name given for an in-memory document).
    public var path: String
    /// The format version; only 1 exists.
    public var version: Int
    /// `root`, relative to the manifest's folder, when the manifest names one.
    public var root: String?
    /// Options every item inherits unless it sets them itself.
    public var defaults: ItemSettings
    /// SHA256SUMS-style files that supply checksums for items without one.
    public var checksums: [ChecksumSource]
    /// The items, in file order.
    public var items: [ManifestItem]
}

/// Options that `defaults` sets for every item and an item may override.
public struct ItemSettings: Sendable, Equatable {
    /// TCP connections per item (SPEC §5).
    public var connections: Int?
    /// Retries per connection; default `connections / 2`, at least 1.
    public var retries: Int?
    /// Never split a file into ranges smaller than this.
    public var minSegment: Int64?
    /// Stall timeout in seconds: no byte for this long fails the connection.
    public var timeout: Double?
    /// Extra request headers, in order.
    public var headers: [HTTPHeader]?
    /// Names of headers whose values never appear in a report or a log.
    public var redact: [String]?
    /// Labels for `--tag` / `--skip-tag`.
    public var tags: [String]?
    /// Skip TLS verification for this item (SPEC §10); the report says so.
    public var insecure: Bool?
    /// Send the headers along when a redirect leads to another origin (SPEC §10).
    public var forwardHeaders: Bool?

    public init() {}
}

/// One SHA256SUMS-style file named under `checksums:`.
public struct ChecksumSource: Sendable, Equatable {
    public var url: String
    public var location: SourceLocation
}

/// One entry of `items:` as written, before defaults are applied.
public struct ManifestItem: Sendable {
    public var url: String
    public var mirrors: [String] = []
    /// The destination as written, relative to the root; nil means the URL's file name.
    public var dest: String?
    /// Lower-case hex SHA-256, when given inline.
    public var sha256: String?
    /// The expected length in bytes, when given.
    public var size: Int64?
    /// The numeric tag echoed in reports (JGDownloadOperation.tag).
    public var tag: Int?
    /// Options set on the item itself.
    public var settings: ItemSettings {
        get { overrides?.settings ?? ItemSettings() }
        set { overrides = newValue == ItemSettings() ? nil : SettingsBox(newValue) }
    }
    /// Most items set nothing of their own: a nil box keeps a 100,000-item manifest
    /// about 9 MB smaller than an inline `ItemSettings` each.
    var overrides: SettingsBox? = nil
    /// Where the item's mapping starts.
    public var location: SourceLocation
    /// Where `url` is, for errors about the URL.
    public var urlLocation: SourceLocation
    /// Where `dest` is (or the item, when it has none), for errors about the destination.
    public var destLocation: SourceLocation
    /// Where `sha256` is, for conflicts with a checksums file.
    public var sha256Location: SourceLocation?
}

/// Immutable storage for an item's own settings.
final class SettingsBox: Sendable {
    let settings: ItemSettings
    init(_ settings: ItemSettings) { self.settings = settings }
}
