/// A kind of set (docs/manifest.md#sets): what lists a set's files — a checksums list
/// (`sums:`), an apt repository (`apt:`). Every set has the keys all sets share (its
/// folder, options, publishing, grace period), read by `ManifestParser+Sets`; a kind
/// reads its own keys (the rows of its `place` in `Rules.table`), checks them once the
/// set is read, and, as an `ExpandingCatalog`, turns itself into items during a run.
///
/// A kind is one type: it conforms here, is listed in `ManifestParser.setKinds`, and
/// has an expansion (`ExpandingCatalog`) in the folder that holds what it needs.
protocol SetCatalog: Sendable {
    /// The key that names the kind and its source: `sums`, `apt`.
    static var key: String { get }
    /// Its key and what the key gives, for a set that lacks it: "'sums' (the URL of its
    /// checksums list)".
    static var naming: String { get }
    /// Where the kind's own keys are in `Rules.table`.
    static var place: OptionRow.Place { get }
    /// `keep_removed` of a set of this kind when neither the set nor `defaults:` gives
    /// one, in seconds (docs/deletions.md#grace-period).
    static var defaultKeepRemoved: Double { get }

    /// A catalog of this kind with none of its keys read yet; `location` is the set's.
    init(at location: SourceLocation)
    /// Reads `key`, one of the kind's own, whose value `parser` is at.
    mutating func read(_ key: String, at location: SourceLocation, with parser: inout ManifestParser) throws(ManifestError)
    /// Checks the kind's keys once the set's mapping is read, with the set's shared keys
    /// and `keyring` (as written, with where it is): required keys, keys that need one
    /// another. Returns the catalog to keep.
    func checked(_ set: ManifestSet, keyring: (String, SourceLocation)?, with parser: ManifestParser) throws(ManifestError)
        -> Self

    /// The URL that names the set in messages and in the report: its list's, its
    /// repository's.
    var source: String { get }
    /// Every URL the set names before anything is fetched (`hosts:` warns of an origin
    /// no URL is on).
    var urls: [String] { get }
    /// The keyring the set's signatures are checked with, as an absolute path: no
    /// output may replace it.
    var keyring: String? { get }
}
