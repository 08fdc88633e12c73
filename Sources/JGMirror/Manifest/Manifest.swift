/// A parsed and validated manifest (docs/manifest.md): what to mirror, where, and how.
public struct Manifest: Sendable {
    /// The manifest's path (or the name given for an in-memory document).
    public var path: String
    /// The format version; only 1 exists.
    public var version: Int
    /// `root`, relative to the manifest's folder, when the manifest names one.
    public var root: String?
    /// Options every item inherits unless it sets them itself.
    public var defaults: ItemSettings
    /// The host options of `defaults`, for the whole run (docs/manifest.md#host-keys).
    public var hosts = HostOptions()
    /// `keep_removed` of `defaults`, in seconds: the grace period of files outside every
    /// set's folder, and of sets that give none (docs/deletions.md#grace-period).
    public var keepRemoved: Double?
    /// The host options of `hosts:`, for one origin each, by origin as the run's host
    /// table spells it (`scheme://host:port`, the default port filled in); what one
    /// leaves unset is `hosts`'.
    public var originHosts: [String: HostOptions] = [:]
    /// SHA256SUMS-style files that supply checksums for items without one.
    public var checksums: [ChecksumSource]
    /// The items, in file order.
    public var items: [ManifestItem] {
        get { itemChunks.all }
        set { itemChunks = ManifestItemChunks(newValue) }
    }
    /// `items`, as the manifest keeps them.
    var itemChunks = ManifestItemChunks()
    /// Checksums lists whose every file becomes an item (docs/manifest.md#sets); emptied
    /// by `expandSets`, which appends their items to `items`.
    public var sets: [ManifestSet] = []
    /// Items whose list failed its signature check, by destination: they are
    /// reported as failed with this error and nothing is fetched for them.
    public var failures: [String: ItemError] = [:]
    /// The destination folders of sets whose list failed its signature check (`""`:
    /// the root): such a list decides nothing, so `--delete` removes nothing there.
    public var distrustedFolders: [String] = []
    /// Lists that could not be fetched, parsed or trusted (docs/sync.md#failed-lists): each fails
    /// its own set, the other sets and items go on, and the run deletes nothing.
    public var listFailures: [ListFailure] = []
    /// What sets place in order after their files, kept by `expandSets`: the verified
    /// list of a set with `publish: true`, an apt suite's indexes and `Release` files
    /// (docs/publishing.md#published-lists).
    public var publishGroups: [PublishGroup] = []
    /// A set at the root asks for snapshot publishing (`publish: snapshot` with no
    /// `dest`): its folder is the whole tree, so the whole run is built as a snapshot
    /// (`SyncOptions.publish`).
    public var publishesSnapshot = false
    /// The largest `keep:` of those sets.
    public var snapshotKeep: Int?
    /// The sets below the root with `publish: snapshot`: each one's folder is
    /// published as snapshots of its own (`SnapshotSet`).
    public var snapshotSets: [SnapshotSet] = []
    /// The destination folders of the manifest's sets (`""`: the root), kept once the
    /// sets are expanded: `--max-delete`'s share is weighed per set folder too.
    public var setFolders: [String] = []
    /// The list URL of each of `setFolders` (the first set's, where two share a
    /// folder), for what a report says of the set.
    public var setLists: [String: String] = [:]
    /// The grace period of each of `setFolders` (`keep_removed`: the set's, else
    /// `defaults:`', else its kind's), in seconds; the longest where two share a folder.
    public var setKeepRemoved: [String: Double] = [:]
    /// Why `expandSets` could not keep a copy of a list in the tree's cache (one line
    /// each); a sync adds them to its report's warnings.
    public var listWarnings: [String] = []
    /// What is allowed but likely wrong, for the CLI to print: destinations that
    /// differ only in case (errors under `--portable-names`, as each says), origins of
    /// `hosts:` that nothing names.
    public var warnings: [ManifestError] = []
    /// Destinations that differ only in case are errors (`--portable-names`), also
    /// among the names a set's list adds.
    var portableNames = false

    init(path: String, version: Int, root: String?, defaults: ItemSettings, checksums: [ChecksumSource], items: [ManifestItem]) {
        self.path = path
        self.version = version
        self.root = root
        self.defaults = defaults
        self.checksums = checksums
        itemChunks = ManifestItemChunks(items)
    }
}

/// Options that `defaults` sets for every item and an item may override.
public struct ItemSettings: Sendable, Equatable {
    /// TCP connections per item (docs/engine.md#connections-and-ranges).
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
    /// Skip TLS verification for this item (docs/safety.md#tls); the report says so.
    public var insecure: Bool?
    /// Send the headers along when a redirect leads to another origin
    /// (docs/safety.md#redirects-and-headers).
    public var forwardHeaders: Bool?
    /// The most bytes accepted for a body of unknown length, or announced for one of
    /// known length (docs/safety.md#size-limits).
    public var maxSize: Int64?
    /// How an item without a checksum follows its remote (docs/sync.md#unchanged-files).
    public var refresh: RefreshPolicy?

    public init() {}
}

/// How a present item without a checksum is checked against its remote
/// (docs/sync.md#unchanged-files).
public enum RefreshPolicy: String, Sendable, Equatable {
    /// A conditional request (`If-None-Match` / `If-Modified-Since`); `304` keeps the file.
    case conditional
    /// Fetched again every run.
    case always
    /// Kept as it is, with no request.
    case never
}

/// One SHA256SUMS-style file named under `checksums:`.
public struct ChecksumSource: Sendable, Equatable {
    public var url: String
    public var location: SourceLocation
    /// A detached signature of the list and the keyring that must have made it.
    public var signature: ListSignature?
}

/// `signature:` + `keyring:` on a checksums list: `gpgv --keyring KEYRING SIG LIST`
/// must accept the list before any hash in it is trusted.
public struct ListSignature: Sendable, Equatable {
    /// URL of the detached signature (`SHA256SUMS.gpg`, `.asc`, `.sign`).
    public var url: String
    /// Absolute path of the keyring (the manifest gives it relative to itself).
    public var keyring: String
}

/// One entry of `items:` as written, before defaults are applied.
public struct ManifestItem: Sendable {
    // Stored fields are ordered to pack the struct (128 bytes), and the URL and
    // destination share a text arena with the items parsed with them: a 100,000-item
    // manifest is whole in memory until its plan is built.

    /// `url` and `dest` (empty when nil).
    private(set) var texts: ItemTexts
    /// Mirrors, SHA-512, tag and size.
    var extras = ItemExtras()
    /// Most items set nothing of their own: a nil box keeps a 100,000-item manifest
    /// about 9 MB smaller than an inline `ItemSettings` each.
    var overrides: SettingsBox? = nil
    /// Where the item's mapping starts.
    public var location: SourceLocation
    /// Where `url` is, for errors about the URL (a `link:` item's target, which it
    /// has instead).
    public var urlLocation: SourceLocation
    /// Where `dest` is (or the item, when it has none), for errors about the destination.
    public var destLocation: SourceLocation
    /// Where `sha256` is, for conflicts with a checksums file.
    public var sha256Location: SourceLocation?
    private var hasDest: Bool
    /// `sha256`, kept as 32 raw bytes.
    var packedSHA256: PackedSHA256?

    public var url: String {
        get { texts.url }
        set { texts = ItemTexts(url: newValue, dest: texts.dest) }
    }
    public var mirrors: [String] {
        get { extras.mirrors }
        set { extras.mirrors = newValue }
    }
    /// The destination relative to the root. A parsed item's is normalised, and is the
    /// URL's file name when the manifest gives none; nil only for an item made without
    /// one.
    public var dest: String? {
        get { hasDest ? texts.dest : nil }
        set {
            texts = ItemTexts(url: texts.url, dest: newValue ?? "")
            hasDest = newValue != nil
        }
    }
    /// Lower-case hex SHA-256, when given inline.
    public var sha256: String? {
        get { packedSHA256?.text }
        set { packedSHA256 = newValue.map(PackedSHA256.init) }
    }
    /// Lower-case hex SHA-512, when given inline or by a SHA512SUMS list.
    public var sha512: String? {
        get { extras.sha512 }
        set { extras.sha512 = newValue }
    }
    /// The expected length in bytes, when given (`Int64.min` reads back as nil).
    public var size: Int64? {
        get { extras.size }
        set { extras.size = newValue }
    }
    /// The numeric tag echoed in reports (JGDownloadOperation.tag).
    public var tag: Int? {
        get { extras.tag }
        set { extras.tag = newValue }
    }
    /// `link:`: the item is a symlink at `dest` with this relative target, as written,
    /// and has no URL (docs/manifest.md#link-items).
    public var link: String? {
        get { extras.link }
        set { extras.link = newValue }
    }
    /// Options set on the item itself.
    public var settings: ItemSettings {
        get { overrides?.settings ?? ItemSettings() }
        set { overrides = newValue == ItemSettings() ? nil : SettingsBox(newValue) }
    }

    init(
        url: String, dest: String? = nil, location: SourceLocation, urlLocation: SourceLocation, destLocation: SourceLocation
    ) {
        self.init(texts: ItemTexts(url: url, dest: dest ?? ""), hasDest: dest != nil, location: location)
        self.urlLocation = urlLocation
        self.destLocation = destLocation
    }

    /// An item whose URL and destination are `texts` (`hasDest`: the destination is
    /// given); everything else is absent and every location is `location`.
    init(texts: ItemTexts, hasDest: Bool, location: SourceLocation) {
        self.texts = texts
        self.hasDest = hasDest
        self.location = location
        urlLocation = location
        destLocation = location
    }

    /// Sets the URL and destination at once, as `texts`.
    mutating func setTexts(_ texts: ItemTexts, hasDest: Bool) {
        self.texts = texts
        self.hasDest = hasDest
    }

}

/// The fields a manifest item and its planned item store alike, out of the way of
/// the many items that lack them: mirrors, SHA-512, tag and link target in an immutable box shared
/// by copies (one empty reference instead of 40 empty bytes; a planned item shares
/// its manifest item's), and the size without an optional's padding (`Int64.min`
/// reads back as nil). 16 bytes.
struct ItemExtras: Sendable {
    private final class Box: Sendable {
        let mirrors: [String]
        let sha512: String?
        let tag: Int?
        let link: String?

        init(mirrors: [String], sha512: String?, tag: Int?, link: String?) {
            self.mirrors = mirrors
            self.sha512 = sha512
            self.tag = tag
            self.link = link
        }
    }

    private var box: Box?
    private var storedSize: Int64

    init(mirrors: [String] = [], sha512: String? = nil, tag: Int? = nil, size: Int64? = nil, link: String? = nil) {
        storedSize = size ?? .min
        box =
            mirrors.isEmpty && sha512 == nil && tag == nil && link == nil
            ? nil : Box(mirrors: mirrors, sha512: sha512, tag: tag, link: link)
    }

    var mirrors: [String] {
        get { box?.mirrors ?? [] }
        set { self = ItemExtras(mirrors: newValue, sha512: sha512, tag: tag, size: size, link: link) }
    }
    var sha512: String? {
        get { box?.sha512 }
        set { self = ItemExtras(mirrors: mirrors, sha512: newValue, tag: tag, size: size, link: link) }
    }
    var tag: Int? {
        get { box?.tag }
        set { self = ItemExtras(mirrors: mirrors, sha512: sha512, tag: newValue, size: size, link: link) }
    }
    /// The target of a `link:` item (rare: boxed with the other rare fields).
    var link: String? {
        get { box?.link }
        set { self = ItemExtras(mirrors: mirrors, sha512: sha512, tag: tag, size: size, link: newValue) }
    }
    var size: Int64? {
        get { storedSize == .min ? nil : storedSize }
        set { storedSize = newValue ?? .min }
    }
}

/// Immutable storage for an item's own settings.
final class SettingsBox: Sendable {
    let settings: ItemSettings
    init(_ settings: ItemSettings) { self.settings = settings }
}

/// A checksums list that failed as a whole (docs/sync.md#failed-lists): it could not be fetched or
/// parsed, named no usable file, or failed its signature with nothing to name. Its
/// set's items cannot be known, so the report carries one row for the list.
public struct ListFailure: Sendable, Equatable {
    /// The set's destination folder (`""`: the root), or nil for a `checksums:` list,
    /// which has no folder of its own.
    public var folder: String?
    /// The list's URL, as the manifest names it.
    public var url: String
    /// `list`, or `signature` for a list whose signature failed.
    public var error: ItemError

    public init(folder: String?, url: String, error: ItemError) {
        self.folder = folder
        self.url = url
        self.error = error
    }

    /// The report row: the set's folder (or the list's URL) as its destination.
    public var result: ItemResult {
        let url = Redactor.redactURLAndQuery(self.url)
        return ItemResult(dest: folder ?? url, url: url, status: .failed, error: error)
    }
}

/// A set below the root with `publish: snapshot`: its folder (`ROOT/<folder>`) is a
/// symlink to the set's published snapshot, swapped once every file of the set and its
/// list are in place and verified, independently of the rest of the run
/// (`SnapshotTree`, docs/publishing.md#a-sets-own-snapshots). Nothing but the set's own files may
/// lie in that folder.
public struct SnapshotSet: Sendable, Equatable {
    /// The set's folder, ending in `/`.
    public var folder: String
    /// Snapshots kept (`keep:`); nil for the default or `--keep`.
    public var keep: Int?
    /// Where the set is in the manifest.
    public var location: SourceLocation
    /// How many items the set's list gave, once expanded; nil while the sets are not
    /// expanded, or when its list failed (then nothing of the set is published).
    public var files: Int?

    /// The folder without its trailing `/`: the path of the link, relative to the root.
    public var scope: String { String(folder.dropLast()) }

    /// Whether `dest` lies inside the set's folder.
    public func holds(_ dest: String) -> Bool { dest.hasPrefix(folder) }
}
