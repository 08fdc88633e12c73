import Foundation

/// `checksums:` and `sets:` (docs/manifest.md#sets, docs/manifest.md#checksums-lists): the
/// checksums lists a manifest names, and the `signature:` + `keyring:` pair either may carry.
extension ManifestParser {
    mutating func parseChecksumSources() throws(ManifestError) -> [ChecksumSource] {
        var sources: [ChecksumSource] = []
        try forEachMapping(
            in: "checksums", what: "each 'checksums' entry is a URL or a mapping with 'url'",
            scalar: { parser throws(ManifestError) in
                let (url, urlLocation) = try parser.readString("checksums")
                try parser.checkURL(url, at: urlLocation)
                sources.append(ChecksumSource(url: url, location: urlLocation))
            },
            { parser, location throws(ManifestError) in
                var seen = SeenKeys(Self.checksumKeys)
                var source: ChecksumSource?
                var signature = SignatureKeys()
                while let (key, _) = try parser.nextKey(in: "a checksums entry", seen: &seen) {
                    if try signature.parse(key, with: &parser) { continue }
                    let (url, urlLocation) = try parser.readString(key)
                    try parser.checkURL(url, at: urlLocation)
                    source = ChecksumSource(url: url, location: urlLocation)
                }
                guard var source else { throw parser.error(location, "a checksums entry needs 'url'") }
                source.signature = try signature.resolve(at: location, parser: parser)
                sources.append(source)
            })
        return sources
    }

    mutating func parseSets() throws(ManifestError) -> [ManifestSet] {
        var sets: [ManifestSet] = []
        try forEachMapping(in: "sets", what: "each set is a mapping with 'sums' or 'apt'") {
            parser, location throws(ManifestError) in
            sets.append(try parser.parseSet(at: location))
        }
        return sets
    }

    /// The kinds of set a manifest may hold, each named by its key (`SetCatalog`).
    static let setKinds: [any SetCatalog.Type] = [SumsCatalog.self, AptCatalog.self]

    /// The keys a set may have: those every set shares, then each kind's own.
    static let setKeys = Rules.keys(in: .set) + setKinds.flatMap { Rules.keys(in: $0.place) }

    /// One set, its mapping's start already read: the keys every set shares here, the
    /// others by the kind whose keys they are, which the first of them decides.
    private mutating func parseSet(at location: SourceLocation) throws(ManifestError) -> ManifestSet {
        var set = ManifestSet(catalog: SumsCatalog(at: location), dest: "", location: location)
        var kind: (catalog: any SetCatalog, key: String, location: SourceLocation)?
        var seen = SeenKeys(Self.setKeys)
        var keyring: (String, SourceLocation)?
        var keepLocation: SourceLocation?
        while let (key, keyLocation) = try nextKey(in: "a set", seen: &seen) {
            if try parseSharedSetKey(key, at: keyLocation, into: &set) { continue }
            switch key {
            case "keyring": keyring = try readString(key)
            case "keep":
                set.keep = try readInt(key, range: Rules.keep.range).0
                keepLocation = keyLocation
            default:
                if try parseSetting(key, into: &set.settings) { continue }
                try readKindKey(key, at: keyLocation, set: location, into: &kind)
            }
        }
        guard let kind, seen.contains(type(of: kind.catalog).key) else {
            let kinds = kind.map { [type(of: $0.catalog)] } ?? Self.setKinds
            throw error(location, "set has no " + kinds.map { $0.naming }.joined(separator: " or "))
        }
        set.catalog = try kind.catalog.checked(set, keyring: keyring, with: self)
        if let keepLocation, !set.snapshot {
            throw error(keepLocation, "'keep' counts snapshots; it needs 'publish: snapshot' in the same set")
        }
        return set
    }

    /// Reads `key`, one of a kind's own keys: the first such key decides the set's kind,
    /// and a key of another kind after it is an error that names both.
    private mutating func readKindKey(
        _ key: String, at keyLocation: SourceLocation, set location: SourceLocation,
        into kind: inout (catalog: any SetCatalog, key: String, location: SourceLocation)?
    ) throws(ManifestError) {
        guard let owner = Self.setKinds.first(where: { Rules.keys(in: $0.place).contains(key) }) else {
            throw error(keyLocation, "unknown key '\(key)' in a set")
        }
        if let chosen = kind, type(of: chosen.catalog) != owner {
            let chosenKind = type(of: chosen.catalog).key
            throw error(
                keyLocation,
                "'\(key)' is a key of '\(owner.key)' sets, and this is a '\(chosenKind)' set ('\(chosen.key)' at line \(chosen.location.line))"
            )
        }
        var catalog = kind?.catalog ?? owner.init(at: location)
        try catalog.read(key, at: keyLocation, with: &self)
        kind = (catalog, kind?.key ?? key, kind?.location ?? keyLocation)
    }

    /// Reads one of the keys every set shares besides `keyring`, `keep` and the item
    /// options; false when `key` is not one.
    private mutating func parseSharedSetKey(_ key: String, at location: SourceLocation, into set: inout ManifestSet)
        throws(ManifestError) -> Bool
    {
        switch key {
        case "dest":
            let (dest, destLocation) = try readString(key)
            set.dest = try Self.normalizeFolder(dest).get(file: reader.sourceName, at: destLocation)
        case "tag": set.tag = try readInt(key, range: Rules.tag).0
        case "keep_removed": set.keepRemoved = try readKeepRemoved()
        case "publish":
            let (text, valueLocation) = try readString(key)
            switch text.lowercased() {
            case "true", "yes", "on": set.publish = true
            case "false", "no", "off": set.publish = false
            case "snapshot": (set.publish, set.snapshot) = (true, true)
            default: throw error(valueLocation, "'publish' must be true, false or snapshot, not '\(text)'")
            }
            set.publishLocation = location
        default: return false
        }
        return true
    }

    /// A set's `dest`: a folder relative to the root, "" for the root itself.
    static func normalizeFolder(_ dest: String) -> Result<String, DestinationPath.Problem> {
        // `/` is absolute, as for an item, not the root it would trim down to.
        if dest.hasPrefix("/") { return .failure(.absolute(dest)) }
        var trimmed = Substring(dest)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty || trimmed == "." { return .success("") }
        return DestinationPath.normalize(String(trimmed), url: "").map { $0 + "/" }
    }

    /// `signature:` and `keyring:`, which come together on a set or a checksums entry.
    struct SignatureKeys {
        var url: (String, SourceLocation)?
        var keyring: (String, SourceLocation)?

        /// Reads `key` when it is one of the two; false otherwise.
        mutating func parse(_ key: String, with parser: inout ManifestParser) throws(ManifestError) -> Bool {
            switch key {
            case "signature":
                let value = try parser.readString(key)
                try parser.checkURL(value.0, at: value.1)
                url = value
            case "keyring":
                keyring = try parser.readString(key)
            default:
                return false
            }
            return true
        }

        /// The pair, with the keyring made absolute against the manifest's folder and
        /// checked to be readable.
        func resolve(at location: SourceLocation, parser: ManifestParser) throws(ManifestError) -> ListSignature? {
            switch (url, keyring) {
            case (nil, nil): return nil
            case (nil, let keyring?):
                throw parser.error(keyring.1, "'keyring' needs 'signature' (the URL of the list's detached signature)")
            case (let url?, nil): throw parser.error(url.1, "'signature' needs 'keyring' (the keys that may sign the list)")
            case (let url?, let keyring?):
                return ListSignature(url: url.0, keyring: try parser.resolveKeyring(keyring))
            }
        }
    }
}

extension ManifestParser {
    /// A keyring as written (with where): made absolute against the manifest's folder
    /// and checked to be readable; an armored one must dearmor (docs/manifest.md#sets).
    func resolveKeyring(_ keyring: (String, SourceLocation)) throws(ManifestError) -> String {
        let parent = Paths.parent(of: reader.sourceName)
        let relative = keyring.0.hasPrefix("/") ? keyring.0 : (parent.isEmpty ? "." : parent) + "/" + keyring.0
        let path = URL(fileURLWithPath: relative).standardizedFileURL.path
        guard let keys = FileManager.default.contents(atPath: path) else {
            throw error(keyring.1, "cannot read keyring '\(keyring.0)' (\(path))")
        }
        // An armored keyring is dearmored for gpgv; one that cannot be is refused now.
        if Keyring.isArmored(keys) {
            do { _ = try Keyring.dearmor(keys) } catch let problem {
                throw error(
                    keyring.1,
                    "keyring '\(keyring.0)' is ASCII-armored but \(problem.message); export it again, or convert it with 'gpg --dearmor'"
                )
            }
        }
        return path
    }
}
