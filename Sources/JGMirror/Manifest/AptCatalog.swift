/// A set that mirrors an apt repository (`apt:`, docs/apt.md): for each suite, its
/// signed `InRelease` (or `Release` + `Release.gpg`), the indexes Release lists for the
/// wanted components and architectures, and every pool file those indexes name, placed
/// pool first, then indexes, then `Release`, then `InRelease`.
struct AptCatalog: SetCatalog {
    static let key = "apt"
    static let naming = "'apt' (the base URL of its apt repository, the folder that holds dists/ and pool/)"
    static let place = OptionRow.Place.apt
    /// A day: apt clients update their indexes about daily, and a client that read
    /// yesterday's index still asks for the files it names.
    static let defaultKeepRemoved = 86_400.0

    /// The repository's base URL, ending in `/`.
    var base = ""
    /// Where `apt` is, for errors about the repository's files.
    var baseLocation: SourceLocation
    /// The suites as a sources.list names them (`bookworm`, `bookworm-updates`).
    var suites: [String] = []
    var components: [String] = []
    /// Binary architectures (`amd64`); `all` is added where Release lists it.
    var architectures: [String] = []
    /// Also the `Sources` indexes and every file of each source package.
    var sources = false
    /// The archive's keys, as an absolute path.
    var keyring: String?

    init(at location: SourceLocation) { baseLocation = location }

    var source: String { base }
    var urls: [String] { [base] }

    mutating func read(_ key: String, at location: SourceLocation, with parser: inout ManifestParser) throws(ManifestError) {
        switch key {
        case "apt":
            let (url, urlLocation) = try parser.readString(key)
            try parser.checkURL(url, at: urlLocation)
            if url.contains("?") || url.contains("#") {
                throw parser.error(urlLocation, "'apt' is the repository's base folder; a query or fragment names no folder")
            }
            base = url.hasSuffix("/") ? url : url + "/"
            baseLocation = urlLocation
        case "suites": suites = try Self.paths(key, with: &parser)
        case "components": components = try Self.paths(key, with: &parser)
        case "architectures":
            for (architecture, valueLocation) in try parser.readStringList(key) {
                guard AptPath.isFileName(architecture), !architecture.contains(" ") else {
                    throw parser.error(valueLocation, "'\(architecture)' is not an architecture name such as amd64 or all")
                }
                if architecture == "source" {
                    throw parser.error(valueLocation, "'source' is not an architecture; 'sources: true' mirrors the sources")
                }
                architectures.append(architecture)
            }
        case "sources": sources = try parser.readBool(key)
        default: throw parser.error(location, "unknown key '\(key)' in an apt set")
        }
    }

    /// A list of names that are paths inside the repository (`bookworm`,
    /// `bookworm/updates`, `main/debian-installer`), each once.
    private static func paths(_ key: String, with parser: inout ManifestParser) throws(ManifestError) -> [String] {
        var values: [String] = []
        for (value, location) in try parser.readStringList(key) {
            if let problem = AptPath.problem(value) ?? (value.contains(" ") ? "contains a space" : nil) {
                throw parser.error(location, "'\(key)' entry '\(value)' \(problem)")
            }
            guard !values.contains(value) else { throw parser.error(location, "'\(value)' is listed twice in '\(key)'") }
            values.append(value)
        }
        return values
    }

    func checked(_ set: ManifestSet, keyring: (String, SourceLocation)?, with parser: ManifestParser) throws(ManifestError)
        -> AptCatalog
    {
        for (key, values) in [("suites", suites), ("components", components), ("architectures", architectures)]
        where values.isEmpty {
            throw parser.error(set.location, "an apt set needs '\(key)' (a list of at least one)")
        }
        guard let keyring else {
            throw parser.error(set.location, "an apt set needs 'keyring': the archive's keys, which must sign its Release")
        }
        if set.publishLocation != set.location, !set.publish {
            throw parser.error(
                set.publishLocation,
                "an apt set always places its indexes after its pool; 'publish' takes true or snapshot (snapshots of its own)")
        }
        var checked = self
        checked.keyring = try parser.resolveKeyring(keyring)
        return checked
    }
}
