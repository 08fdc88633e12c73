/// One row of the option table (`Rules.table`): a manifest key or a command-line
/// option, where it may be written, what it takes, its default, its bounds and what
/// it does. The manifest parser takes its keys from these rows, `--help` its
/// manifest summary, and docs/manifest.md its key reference
/// (docs/manifest.md#top-level-keys), so a key is described once.
public struct OptionRow: Sendable, Equatable {
    /// Where in a manifest a key may be written.
    public enum Place: String, Sendable, CaseIterable {
        /// The manifest's top level.
        case top
        /// `defaults:`.
        case defaults
        /// An entry of `items:` that fetches a file.
        case item
        /// An entry of `items:` with `link:`.
        case link
        /// An entry of `sets:`: the keys every kind of set takes.
        case set
        /// A `sums:` set's own keys (docs/manifest.md#sets).
        case sums
        /// An `apt:` set's own keys (docs/manifest.md#sets).
        case apt
        /// An entry of `checksums:`.
        case checksums
        /// The options of one origin under `hosts:`.
        case origin

        /// The keys `defaults`, items and sets share (`connections`, `timeout`, …).
        public static let itemSettings: [Place] = [.defaults, .item, .set]
        /// The host options: in `defaults`, and per origin under `hosts:`.
        public static let hostSettings: [Place] = [.defaults, .origin]
    }

    /// The manifest key; nil for an option of the command line alone.
    public var key: String?
    /// Where the key may be written; empty for an option of the command line alone.
    public var places: [Place]
    /// The command-line options that take the same value (`--connections`, `get -c`).
    public var flags: [String]
    /// What the value is: `whole number`, `size`, `duration`, `URL`, `list of URLs`, ….
    public var type: String
    /// The value when none is given, as the manifest writes it (`6`, `30s`), or what
    /// stands in for it (`the manifest's folder`, `none`).
    public var defaultText: String
    /// The values accepted, when the parser bounds them (`1 to 64`).
    public var bounds: String?
    /// What the key does, one sentence for the person writing a manifest.
    public var help: String
    /// A value as a manifest writes it (`8`, `[https://mirror.example.net/a.iso]`).
    public var example: String?
    /// How the row is named where it has no key: its first option, or a label.
    public var label: String?

    public init(
        key: String?, places: [Place], flags: [String] = [], type: String, defaultText: String, bounds: String? = nil,
        help: String, example: String? = nil, label: String? = nil
    ) {
        self.key = key
        self.places = places
        self.flags = flags
        self.type = type
        self.defaultText = defaultText
        self.bounds = bounds
        self.help = help
        self.example = example
        self.label = label
    }

    /// The row's name in a table: the key, else the label, else the first option.
    public var name: String { key ?? label ?? flags.first ?? "" }
}
