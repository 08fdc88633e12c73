/// One entry of `sets:`: a catalog (a checksums list, an apt repository) whose every
/// file becomes an item (docs/manifest.md#sets), with the keys every kind of set shares.
public struct ManifestSet: Sendable {
    /// What lists the set's files, and its kind's own keys (`SumsCatalog`, `AptCatalog`).
    var catalog: any SetCatalog
    /// Folder under the root the set's files go into, normalised: "" or ending in `/`.
    public var dest: String
    /// The numeric tag every item of the set carries.
    public var tag: Int?
    /// Item options for every item of the set.
    public var settings = ItemSettings()
    /// Where the set's mapping starts.
    public var location: SourceLocation
    /// Place what the set's catalog says of its files (a verified list and signature)
    /// in `dest` once every file of the set is in place (`publish: true`,
    /// docs/publishing.md#published-lists).
    public var publish = false
    /// Where `publish` is, for errors about it.
    var publishLocation: SourceLocation
    /// `publish: snapshot`: the set's folder is published as a snapshot
    /// (docs/publishing.md#a-sets-own-snapshots), the list placed as with `publish: true`, inside
    /// it; a set at the root makes the whole run a snapshot run.
    public var snapshot = false
    /// Snapshots to keep (`keep:`, with `publish: snapshot`).
    public var keep: Int?
    /// `keep_removed:` in seconds: how long a file that left the set's catalog stays
    /// before `--delete` removes it (docs/deletions.md#grace-period); nil: `defaults:`'s,
    /// else the kind's default.
    public var keepRemoved: Double?

    /// The URL that names the set: its list's, its repository's.
    public var source: String { catalog.source }

    /// The kind of the set: the key that names it (`sums`, `apt`).
    public var kind: String { type(of: catalog).key }

    /// The keyring the set's signatures are checked with, as an absolute path.
    public var keyring: String? { catalog.keyring }

    init(catalog: any SetCatalog, dest: String, location: SourceLocation) {
        self.catalog = catalog
        self.dest = dest
        self.location = location
        publishLocation = location
    }

    /// A `sums:` set of the list at `sums`.
    init(sums: String, dest: String, location: SourceLocation, sumsLocation: SourceLocation) {
        self.init(catalog: SumsCatalog(sums: sums, at: sumsLocation), dest: dest, location: location)
    }
}
