/// One item of the queue with every option resolved: what the engine fetches and
/// where the verified bytes land.
public struct PlannedItem: Sendable, Identifiable {
    // Stored fields are ordered to pack the struct (120 bytes): a plan holds one per
    // item for the whole run.

    /// `url` and `dest`, in a text arena shared with the items parsed with it.
    private var texts: ItemTexts
    /// The resolved options, shared by every item that resolves to the same ones
    /// (most items of a large manifest take all of theirs from `defaults`): inline,
    /// they were 90 bytes of every item, and each item's merged header list its own
    /// allocation.
    private var shared: ItemOptions
    /// Mirrors, SHA-512, tag and size, shared with the manifest item's.
    private var extras: ItemExtras
    /// Position in the manifest (0-based), stable across filters.
    public var id: Int
    /// Where the item is in the manifest, for errors found after planning.
    public var location: SourceLocation
    /// Where its `sha256` is, when inline.
    public var sha256Location: SourceLocation?
    /// `sha256`, kept as 32 raw bytes.
    var expectedSHA256: PackedSHA256?

    /// Primary URL.
    public var url: String {
        get { texts.url }
        set { texts = ItemTexts(url: newValue, dest: dest) }
    }
    /// Other URLs with the same bytes, tried in turn.
    public var mirrors: [String] {
        get { extras.mirrors }
        set { extras.mirrors = newValue }
    }
    /// Destination relative to the root, normalised.
    public var dest: String {
        get { texts.dest }
        set { texts = ItemTexts(url: url, dest: newValue) }
    }
    /// Absolute destination path (computed: storing it cost 100 bytes per item).
    public var path: String { root + "/" + dest }
    /// Expected SHA-256 (lower-case hex), when known.
    public var sha256: String? {
        get { expectedSHA256?.text }
        set { expectedSHA256 = newValue.map(PackedSHA256.init) }
    }
    /// Expected SHA-512 (lower-case hex), when the manifest or a SHA512SUMS list gives one.
    public var sha512: String? {
        get { extras.sha512 }
        set { extras.sha512 = newValue }
    }
    /// Expected length; a server that disagrees fails the item (`Int64.min` reads back
    /// as nil).
    public var size: Int64? {
        get { extras.size }
        set { extras.size = newValue }
    }
    /// Numeric tag echoed in reports.
    public var tag: Int? {
        get { extras.tag }
        set { extras.tag = newValue }
    }
    /// For a `link:` item, the symlink's target as the manifest writes it (relative to
    /// the link's folder); nil for an item fetched from `url`, which a link item lacks.
    public var link: String? {
        get { extras.link }
        set { extras.link = newValue }
    }
    /// Whether the item is a symlink to place rather than a file to fetch.
    public var isLink: Bool { extras.link != nil }

    /// The item's resolved options (`ItemOptions`: `item.options.timeout`), shared with
    /// the items that resolve to the same ones, and handed to the engine by reference.
    public var options: ItemOptions { shared }

    /// Absolute destination root.
    public var root: String {
        get { shared.values.root }
        set { change { $0.root = newValue } }
    }
    public var connections: Int { shared.values.connections }
    public var tags: [String] { shared.values.tags }
    /// Set when the item must fail without a transfer: its checksums list failed its
    /// signature check.
    public var failure: ItemError? {
        get { shared.values.failure }
        set { change { $0.failure = newValue } }
    }

    init(
        id: Int, texts: ItemTexts, extras: ItemExtras, sha256: PackedSHA256?, options values: ItemOptions.Values,
        location: SourceLocation, sha256Location: SourceLocation?, sharing previous: PlannedItem? = nil
    ) {
        if let previous, previous.shared.values == values {
            shared = previous.shared
        } else {
            shared = ItemOptions(values)
        }
        self.texts = texts
        self.extras = extras
        self.id = id
        self.location = location
        self.sha256Location = sha256Location
        expectedSHA256 = sha256
    }

    /// Moves the item under `root`, sharing the options of the item moved before it
    /// when both shared theirs before (`last`: that item's options, old and new).
    mutating func move(to root: String, after last: inout (old: ItemOptions, new: ItemOptions)?) {
        if let last, last.old === shared {
            shared = last.new
            return
        }
        let old = shared
        change { $0.root = root }
        last = (old, shared)
    }

    /// Whether this item and `other` hold one shared set of options.
    func sharesOptions(with other: PlannedItem) -> Bool { shared === other.shared }

    private mutating func change(_ update: (inout ItemOptions.Values) -> Void) {
        var values = shared.values
        update(&values)
        shared = ItemOptions(values)
    }

    /// Cleans secrets from text about this item.
    public var redactor: Redactor { Redactor(headers: options.headers, redact: options.redact, urls: [url] + mirrors) }
    /// Whether a checksum decides the item's content (else it is `unverified`).
    public var hasChecksum: Bool { expectedSHA256 != nil || sha512 != nil }
    /// The URL as reports and logs may show it: no credentials, and no value of a
    /// query parameter named in `redact`.
    public var displayURL: String { Redactor(redact: options.redact).redact(url: url) }
}
