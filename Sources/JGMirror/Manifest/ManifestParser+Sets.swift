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
        try forEachMapping(in: "sets", what: "each set is a mapping with at least 'sums'") {
            parser, location throws(ManifestError) in
            sets.append(try parser.parseSet(at: location))
        }
        return sets
    }

    /// One set, its mapping's start already read.
    private mutating func parseSet(at location: SourceLocation) throws(ManifestError) -> ManifestSet {
        var set = ManifestSet(sums: "", dest: "", location: location, sumsLocation: location)
        var seen = SeenKeys(Self.setKeys)
        var signature = SignatureKeys()
        var publishLocation = location
        var keepLocation: SourceLocation?
        while let (key, keyLocation) = try nextKey(in: "a set", seen: &seen) {
            if try signature.parse(key, with: &self) { continue }
            switch key {
            case "sums":
                let (url, urlLocation) = try readString(key)
                try checkURL(url, at: urlLocation)
                set.sums = url
                set.sumsLocation = urlLocation
            case "dest":
                let (dest, destLocation) = try readString(key)
                set.dest = try Self.normalizeFolder(dest).get(file: reader.sourceName, at: destLocation)
            case "include": set.include = try readStringList(key).map(\.0)
            case "exclude": set.exclude = try readStringList(key).map(\.0)
            case "mirrors_base":
                for (mirror, mirrorLocation) in try readStringList(key) {
                    try checkURL(mirror, at: mirrorLocation)
                    set.mirrorsBase.append(mirror)
                }
            case "tag": set.tag = try readInt(key, range: Rules.tag).0
            case "publish":
                let (text, location) = try readString(key)
                switch text.lowercased() {
                case "true", "yes", "on": set.publish = true
                case "false", "no", "off": set.publish = false
                case "snapshot": (set.publish, set.snapshot) = (true, true)
                default: throw error(location, "'publish' must be true, false or snapshot, not '\(text)'")
                }
                publishLocation = keyLocation
            case "keep":
                set.keep = try readInt(key, range: Rules.keep.range).0
                keepLocation = keyLocation
            default:
                guard try parseSetting(key, into: &set.settings) else {
                    throw error(keyLocation, "unknown key '\(key)' in a set")
                }
            }
        }
        guard seen.contains("sums") else { throw error(location, "set has no 'sums' (the URL of its checksums list)") }
        set.signature = try signature.resolve(at: location, parser: self)
        if set.publish { try checkPublishedNames(of: set, at: publishLocation) }
        if let keepLocation, !set.snapshot {
            throw error(keepLocation, "'keep' counts snapshots; it needs 'publish: snapshot' in the same set")
        }
        return set
    }

    /// The names a published list and its signature take must be file names, and two.
    private func checkPublishedNames(of set: ManifestSet, at location: SourceLocation) throws(ManifestError) {
        guard let name = PublishGroup.fileName(of: set.sums) else {
            let url = Redactor.redactURLAndQuery(set.sums)
            throw error(location, "'publish' needs a list URL that ends in a file name; '\(url)' names none")
        }
        guard let signature = set.signature else { return }
        guard let signatureName = PublishGroup.fileName(of: signature.url) else {
            let url = Redactor.redactURLAndQuery(signature.url)
            throw error(location, "'publish' needs a signature URL that ends in a file name; '\(url)' names none")
        }
        if signatureName == name {
            throw error(location, "'publish' would place the list and its signature under one name, '\(name)'")
        }
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
                let parent = Paths.parent(of: parser.reader.sourceName)
                let relative = keyring.0.hasPrefix("/") ? keyring.0 : (parent.isEmpty ? "." : parent) + "/" + keyring.0
                let path = URL(fileURLWithPath: relative).standardizedFileURL.path
                guard let keys = FileManager.default.contents(atPath: path) else {
                    throw parser.error(keyring.1, "cannot read keyring '\(keyring.0)' (\(path))")
                }
                // An armored keyring is dearmored for gpgv; one that cannot be is refused now.
                if Keyring.isArmored(keys) {
                    do { _ = try Keyring.dearmor(keys) } catch {
                        throw parser.error(
                            keyring.1,
                            "keyring '\(keyring.0)' is ASCII-armored but \(error.message); export it again, or convert it with 'gpg --dearmor'"
                        )
                    }
                }
                return ListSignature(url: url.0, keyring: path)
            }
        }
    }
}
