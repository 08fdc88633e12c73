import Foundation

/// Recursive descent over libyaml events into a `Manifest`, validating as it goes.
///
/// Each item is built from its events and appended; no tree of the document is ever
/// held, so memory grows with the item list only.
struct ManifestParser {
    let reader: YAMLEventReader
    private let options: ManifestOptions
    private var peeked: (YAMLEvent, SourceLocation)?
    /// Where the items' URLs and destinations are kept.
    private var texts = TextArena.Builder()
    /// Destinations that cannot be normalised, by item index: found while each item is
    /// parsed, reported by `validateItems` in item order, as the checks across items are.
    private var destinationFailures: [Int: ManifestError] = [:]
    /// libcurl's URL parser, one handle for every URL of the manifest.
    private let curlURL = CurlURL()

    static let topKeys = ["version", "root", "defaults", "checksums", "sets", "items"]
    static let settingKeys = [
        "connections", "retries", "min_segment", "timeout", "headers", "redact", "tags", "insecure", "forward_headers", "max_size",
        "refresh",
    ]
    static let itemKeys = ["url", "mirrors", "dest", "sha256", "sha512", "size", "tag", "link"] + settingKeys
    /// The keys a `link:` item may have besides `link`: it fetches nothing.
    static let linkKeys: Set<String> = ["link", "dest", "tag", "tags"]
    static let checksumKeys = ["url", "signature", "keyring"]
    static let setKeys = ["sums", "dest", "include", "exclude", "mirrors_base", "signature", "keyring", "tag", "publish", "keep"] + settingKeys

    init(reader: YAMLEventReader, options: ManifestOptions) {
        self.reader = reader
        self.options = options
    }

    // MARK: Document

    mutating func parse() throws(ManifestError) -> Manifest {
        _ = try next()  // stream start
        let (first, firstLocation) = try next()
        if first == .streamEnd { throw error(firstLocation, "the manifest is empty; it needs 'version' and 'items'") }
        let (top, topLocation) = try next()
        guard top == .mappingStart else {
            throw error(topLocation, "the manifest must be a mapping with 'version' and 'items', found \(top.noun)")
        }
        var manifest = Manifest(
            path: reader.sourceName, version: 0, root: nil, defaults: ItemSettings(), checksums: [], items: [])
        var seen = SeenKeys(Self.topKeys)
        while let (key, keyLocation) = try nextKey(in: "the manifest", seen: &seen) {
            switch key {
            case "version":
                let (value, location) = try readInt(key, range: 0...Int.max)
                guard value == 1 else {
                    throw error(location, "unsupported manifest version \(value); this jgmirror reads version 1")
                }
                manifest.version = value
            case "root":
                let (value, location) = try readString(key)
                guard !value.isEmpty else { throw error(location, "'root' must not be empty") }
                manifest.root = value
            case "defaults":
                (manifest.defaults, manifest.hosts) = try parseDefaults()
            case "checksums":
                manifest.checksums = try parseChecksumSources()
            case "sets":
                manifest.sets = try parseSets()
                manifest.publishesSnapshot = manifest.sets.contains(where: \.snapshot)
                manifest.snapshotKeep = manifest.sets.compactMap(\.keep).max()
            case "items":
                try parseItems(into: &manifest.itemChunks)
            default:
                throw error(keyLocation, "unknown key '\(key)'")
            }
        }
        if !seen.contains("version") { throw error(topLocation, "missing required key 'version' (use 'version: 1')") }
        if !seen.contains("items") && !seen.contains("sets") {
            throw error(topLocation, "missing required key 'items' (or 'sets')")
        }
        _ = try next()  // document end
        let (after, afterLocation) = try next()
        if after != .streamEnd { throw error(afterLocation, "a manifest holds one YAML document; remove the second") }
        try validateItems(&manifest)
        manifest.portableNames = options.portableNames
        return manifest
    }

    private mutating func parseDefaults() throws(ManifestError) -> (ItemSettings, HostOptions) {
        let start = try expectMapping("defaults")
        var settings = ItemSettings()
        var hosts = HostOptions()
        var seen = SeenKeys(Self.settingKeys + HostOptions.keys)
        while let (key, keyLocation) = try nextKey(in: "defaults", seen: &seen) {
            if try parseSetting(key, into: &settings) { continue }
            guard try parseHostOption(key, into: &hosts) else {
                throw error(keyLocation, "unknown key '\(key)' in defaults")
            }
        }
        _ = start
        return (settings, hosts)
    }

    /// Parses one of the host options of `defaults`; false when `key` is not one.
    private mutating func parseHostOption(_ key: String, into hosts: inout HostOptions) throws(ManifestError) -> Bool {
        func duration(in range: ClosedRange<Double>) throws(ManifestError) -> Double {
            let (seconds, location) = try readDuration(key)
            if let problem = Rules.durationProblem(seconds, in: range) { throw error(location, "'\(key)' \(problem)") }
            return seconds
        }
        switch key {
        case "connect_timeout": hosts.connectTimeout = try duration(in: Rules.connectTimeout)
        case "host_grace": hosts.hostGrace = try duration(in: Rules.hostGrace)
        case "max_wait": hosts.maxWait = try duration(in: Rules.maxWait)
        case "min_rate":
            let (text, location) = try readScalar(key, expecting: "a rate")
            guard let rate = Units.parseRate(text), Rules.rate.contains(rate) else {
                throw error(location, "'min_rate' must be a rate such as 512, 1KiB or 64KiB/s, at least 1 byte/s, not '\(text)'")
            }
            hosts.minRate = rate
        default: return false
        }
        return true
    }

    private mutating func parseItems(into items: inout ManifestItemChunks) throws(ManifestError) {
        try forEachMapping(in: "items", what: "each item is a mapping with at least 'url'") { parser, location throws(ManifestError) in
            items.append(try parser.parseItem(at: location, index: items.count))
        }
    }

    private mutating func parseItem(at location: SourceLocation, index: Int) throws(ManifestError) -> ManifestItem {
        var item = ManifestItem(texts: .empty, hasDest: false, location: location)
        var url = ""
        var dest: String?
        var seen = SeenKeys(Self.itemKeys)
        // The first key a `link:` item cannot have, for the error if it has `link`.
        var fileKey: (String, SourceLocation)?
        var link: (String, SourceLocation)?
        while let (key, keyLocation) = try nextKey(in: "an item", seen: &seen) {
            if fileKey == nil, !Self.linkKeys.contains(key) { fileKey = (key, keyLocation) }
            switch key {
            case "link":
                link = try readString(key)
            case "url":
                let urlLocation: SourceLocation
                (url, urlLocation) = try readString(key)
                try checkURL(url, at: urlLocation)
                item.urlLocation = urlLocation
            case "mirrors":
                for (mirror, mirrorLocation) in try readStringList(key) {
                    try checkURL(mirror, at: mirrorLocation)
                    item.mirrors.append(mirror)
                }
            case "dest":
                let destLocation: SourceLocation
                (dest, destLocation) = try readString(key)
                item.destLocation = destLocation
            case "sha256":
                let (text, shaLocation) = try readString(key)
                guard let hasUpperCase = Rules.hexCase(text) else {
                    throw error(shaLocation, "'sha256' must be 64 hexadecimal digits, got \(Self.quoted(text))")
                }
                guard !seen.contains("sha512") else { throw error(shaLocation, "give 'sha256' or 'sha512', not both") }
                // Lower-cased only when it has an upper-case digit: no copy per item otherwise.
                item.packedSHA256 = PackedSHA256(hasUpperCase ? text.lowercased() : text)
                item.sha256Location = shaLocation
            case "sha512":
                let (text, shaLocation) = try readString(key)
                guard let hasUpperCase = Rules.hexCase(text, count: 128) else {
                    throw error(shaLocation, "'sha512' must be 128 hexadecimal digits, got \(Self.quoted(text))")
                }
                guard !seen.contains("sha256") else { throw error(shaLocation, "give 'sha256' or 'sha512', not both") }
                item.sha512 = hasUpperCase ? text.lowercased() : text
            case "size":
                item.size = try readSize(key).0
            case "tag":
                item.tag = try readInt(key, range: Rules.tag).0
            default:
                guard try parseSetting(key, into: &item.settings) else {
                    throw error(keyLocation, "unknown key '\(key)' in an item")
                }
            }
        }
        if let link { return try linkItem(item, target: link, dest: dest, conflicting: fileKey) }
        guard seen.contains("url") else { throw error(location, "item has no 'url'") }
        // Normalised now, so that the item's texts are stored once.
        switch DestinationPath.normalize(dest, url: url) {
        case .success(let normalized):
            item.setTexts(texts.texts(url: url, dest: normalized), hasDest: true)
        case .failure(let problem):
            destinationFailures[index] = error(item.destLocation, problem.message)
            item.setTexts(texts.texts(url: url, dest: dest ?? ""), hasDest: dest != nil)
        }
        return item
    }

    /// Completes a `link:` item: a destination of its own, and a target that stays
    /// inside the root (SPEC §10); `conflicting` is the first key that only an item
    /// with a URL may have.
    private mutating func linkItem(
        _ item: ManifestItem, target: (String, SourceLocation), dest: String?, conflicting: (String, SourceLocation)?
    ) throws(ManifestError) -> ManifestItem {
        var item = item
        if let (key, keyLocation) = conflicting {
            throw error(keyLocation, "'\(key)' cannot be used with 'link': a link item has only 'link', 'dest', 'tag' and 'tags'")
        }
        guard let dest else { throw error(item.location, "a 'link' item needs a 'dest': the path of the link itself") }
        guard !dest.hasSuffix("/") else {
            throw error(item.destLocation, "the 'dest' of a link names the link itself; remove the trailing '/'")
        }
        let normalized = try DestinationPath.normalize(dest, url: "").get(file: reader.sourceName, at: item.destLocation)
        switch LinkTarget.resolve(target.0, dest: normalized) {
        case .success: break
        case .failure(let problem): throw error(target.1, problem.message)
        }
        item.setTexts(texts.texts(url: "", dest: normalized), hasDest: true)
        item.link = target.0
        return item
    }

    /// Parses one of the keys `defaults` and items share; false when `key` is not one.
    mutating func parseSetting(_ key: String, into settings: inout ItemSettings) throws(ManifestError) -> Bool {
        switch key {
        case "connections": settings.connections = try readInt(key, range: Rules.connections).0
        case "retries": settings.retries = try readInt(key, range: Rules.retries).0
        case "min_segment":
            let (size, location) = try readSize(key)
            guard size >= Rules.minimumSegment else { throw error(location, "'min_segment' must be at least 16KiB") }
            settings.minSegment = size
        case "timeout":
            let (seconds, location) = try readDuration(key)
            if let problem = Rules.durationProblem(seconds, in: Rules.timeout) { throw error(location, "'timeout' \(problem)") }
            settings.timeout = seconds
        case "max_size":
            let (size, location) = try readSize(key)
            guard size > 0 else { throw error(location, "'max_size' must be more than 0 bytes") }
            settings.maxSize = size
        case "headers": settings.headers = try readHeaders(key)
        case "redact": settings.redact = try readStringList(key).map(\.0)
        case "tags": settings.tags = try readStringList(key).map(\.0)
        case "insecure": settings.insecure = try readBool(key)
        case "forward_headers": settings.forwardHeaders = try readBool(key)
        case "refresh":
            let (text, location) = try readScalar(key, expecting: "conditional, always or never")
            guard let policy = RefreshPolicy(rawValue: text) else {
                throw error(location, "'refresh' must be conditional, always or never, not '\(text)'")
            }
            settings.refresh = policy
        default: return false
        }
        return true
    }

    // MARK: Validation across items

    private func validateItems(_ manifest: inout Manifest) throws(ManifestError) {
        let items = manifest.itemChunks
        var destinations = DestinationIndex(capacity: items.count)
        var directories = Set<String>()
        // The same, case-folded: names that collide on a case-insensitive file system.
        var foldedDestinations: [String: (dest: String, line: Int)] = [:]
        var foldedDirectories: [String: String] = [:]
        for index in items.indices {
            if let failure = destinationFailures[index] { throw failure }
            let item = items[index]
            let dest = item.dest ?? ""  // normalised by `parseItem`
            if let first = destinations.location(of: dest, in: items) {
                throw error(item.destLocation, "destination '\(dest)' is already used by the item at line \(first.line)")
            }
            if directories.contains(dest) {
                throw error(item.destLocation, "destination '\(dest)' is a folder of another item's destination")
            }
            var parent = dest
            while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
                parent = String(parent[..<slash])
                if let clash = destinations.location(of: parent, in: items) {
                    throw error(item.destLocation, "destination '\(dest)' lies inside '\(parent)', the file of the item at line \(clash.line)")
                }
                if !directories.insert(parent).inserted { break }
            }
            destinations.insert(dest, at: index, of: items)
            if let clash = Self.caseClash(
                dest, line: item.destLocation.line, exact: { destinations.location(of: $0, in: items) }, exactFolders: directories,
                &foldedDestinations, &foldedDirectories)
            {
                let problem = error(item.destLocation, clash + " on a case-insensitive file system (macOS, Windows)")
                if options.portableNames { throw problem }
                manifest.warnings.append(problem)
            }
            if options.requireChecksums, item.packedSHA256 == nil, item.sha512 == nil, item.link == nil,
                manifest.checksums.isEmpty
            {
                throw error(item.location, "item '\(dest)' has no 'sha256' and --require-checksums is set")
            }
        }
    }

    /// Says which other destination `dest` would collide with where case does not
    /// count (a file with a file, or a file with a folder), and records it. Only
    /// destinations with an upper-case or non-ASCII byte are kept case-folded in
    /// `files`/`folders`: an all-lower-case one is its own folded form and already in
    /// `exact`/`exactFolders`, so a typical manifest pays lookups and no copies.
    /// `SetExpansion` applies the same rule to the names a list adds.
    static func caseClash(
        _ dest: String, line: Int, exact: (String) -> SourceLocation?, exactFolders: Set<String>,
        _ files: inout [String: (dest: String, line: Int)], _ folders: inout [String: String]
    ) -> String? {
        let folds = dest.utf8.contains { ($0 >= 0x41 && $0 <= 0x5A) || $0 >= 0x80 }
        let folded = folds ? dest.lowercased() : dest
        if let other = files[folded] {
            return "destination '\(dest)' and '\(other.dest)' (line \(other.line)) are the same file"
        }
        // Folding may leave a name as it was (`café`): then the exact lookup would
        // find this destination itself.
        let changed = folds && folded != dest
        if changed, let other = exact(folded) {
            return "destination '\(dest)' and '\(folded)' (line \(other.line)) are the same file"
        }
        if let other = folders[folded] ?? (changed && exactFolders.contains(folded) ? folded : nil) {
            return "destination '\(dest)' is the same name as the folder '\(other)' of another item"
        }
        var parent = Substring(dest)
        var foldedParent = Substring(folded)
        while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")),
            let foldedSlash = foldedParent.utf8.lastIndex(of: UInt8(ascii: "/"))
        {
            parent = parent[..<slash]
            foldedParent = foldedParent[..<foldedSlash]
            let key = String(foldedParent)
            if let other = files[key] {
                return "the folder '\(parent)' of destination '\(dest)' is the same name as '\(other.dest)' (line \(other.line))"
            }
            if folds, key != parent, let other = exact(key) {
                return "the folder '\(parent)' of destination '\(dest)' is the same name as '\(key)' (line \(other.line))"
            }
            if folds { folders[key] = folders[key] ?? String(parent) }
        }
        if folds { files[folded] = (dest, line) }
        return nil
    }

    /// A wrong checksum as an error quotes it: shortened, with its length (once).
    static func quoted(_ text: String) -> String {
        text.count > 80 ? "'\(Rules.abbreviated(text))'" : "'\(text)' (\(text.count) characters)"
    }

    func checkURL(_ url: String, at location: SourceLocation) throws(ManifestError) {
        if let problem = Rules.urlProblem(url, allowFileURLs: options.allowFileURLs, curl: curlURL) {
            throw error(location, problem)
        }
    }

    // MARK: Typed values

    private mutating func readScalar(_ key: String, expecting kind: String) throws(ManifestError) -> (String, SourceLocation) {
        let (event, location) = try next()
        switch event {
        case .scalar(let text, _):
            return (text, location)
        case .alias:
            throw error(location, "YAML aliases are not supported in manifests ('\(key)')")
        default:
            throw error(location, "'\(key)' expects \(kind), found \(event.noun)")
        }
    }

    mutating func readString(_ key: String) throws(ManifestError) -> (String, SourceLocation) {
        let (text, location) = try readScalar(key, expecting: "a string")
        return (try expandEnvironment(text, at: location), location)
    }

    mutating func readInt(_ key: String, range: ClosedRange<Int>) throws(ManifestError) -> (Int, SourceLocation) {
        let (text, location) = try readScalar(key, expecting: "a whole number")
        guard let value = Int(text), range.contains(value) else {
            if range.upperBound == Int.max || range.lowerBound == Int.min {
                throw error(location, "'\(key)' must be a whole number, not '\(text)'")
            }
            throw error(location, "'\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return (value, location)
    }

    private mutating func readSize(_ key: String) throws(ManifestError) -> (Int64, SourceLocation) {
        let (text, location) = try readScalar(key, expecting: "a size")
        guard let value = Units.parseSize(text) else {
            throw error(location, "'\(key)' must be a size such as 4096, 512KiB, 1MiB or 2GB, not '\(text)'")
        }
        if let problem = Rules.sizeProblem(value) { throw error(location, "'\(key)' \(problem), not '\(text)'") }
        return (value, location)
    }

    private mutating func readDuration(_ key: String) throws(ManifestError) -> (Double, SourceLocation) {
        let (text, location) = try readScalar(key, expecting: "a duration")
        guard let value = Units.parseDuration(text) else {
            throw error(location, "'\(key)' must be a duration such as 500ms, 30s or 2m, not '\(text)'")
        }
        return (value, location)
    }

    mutating func readBool(_ key: String) throws(ManifestError) -> Bool {
        let (text, location) = try readScalar(key, expecting: "true or false")
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error(location, "'\(key)' must be true or false, not '\(text)'")
        }
    }

    /// A list of strings; a single scalar counts as a list of one.
    mutating func readStringList(_ key: String) throws(ManifestError) -> [(String, SourceLocation)] {
        let (event, location) = try peek()
        if case .scalar = event { return [try readString(key)] }
        guard event == .sequenceStart else { throw error(location, "'\(key)' expects a list, found \(event.noun)") }
        _ = try next()
        var values: [(String, SourceLocation)] = []
        while true {
            let (element, elementLocation) = try peek()
            if element == .sequenceEnd {
                _ = try next()
                return values
            }
            guard case .scalar = element else {
                throw error(elementLocation, "'\(key)' expects a list of strings, found \(element.noun)")
            }
            values.append(try readString(key))
        }
    }

    private mutating func readHeaders(_ key: String) throws(ManifestError) -> [HTTPHeader] {
        _ = try expectMapping(key)
        var headers: [HTTPHeader] = []
        var seen = Set<String>()
        while true {
            let (event, location) = try next()
            if event == .mappingEnd { return headers }
            guard case .scalar(let name, _) = event else {
                throw error(location, "header names must be strings, found \(event.noun)")
            }
            if let problem = Rules.headerProblem(name: name) { throw error(location, problem) }
            guard seen.insert(name.lowercased()).inserted else { throw error(location, "header '\(name)' is set twice") }
            let (value, valueLocation) = try readString(name)
            guard HTTPHeader.isValidValue(value) else {
                throw error(valueLocation, "the value of header '\(name)' contains a line break or control character")
            }
            headers.append(HTTPHeader(name: name, value: value))
        }
    }

    // MARK: Structure

    /// The next key of the current mapping, or nil at its end; rejects unknown and repeated keys.
    mutating func nextKey(
        in context: String, seen: inout SeenKeys
    ) throws(ManifestError) -> (String, SourceLocation)? {
        let (event, location) = try next()
        if event == .mappingEnd { return nil }
        guard case .scalar(let key, _) = event else {
            throw error(location, "keys in \(context) must be strings, found \(event.noun)")
        }
        guard let index = seen.allowed.firstIndex(of: key) else {
            var message = "unknown key '\(key)' in \(context)"
            if let suggestion = Spelling.closest(to: key, among: seen.allowed) {
                message += " (did you mean '\(suggestion)'?)"
            }
            throw error(location, message)
        }
        guard seen.insert(at: index) else { throw error(location, "key '\(key)' appears twice in \(context)") }
        return (key, location)
    }

    private mutating func expectMapping(_ key: String) throws(ManifestError) -> SourceLocation {
        let (event, location) = try next()
        guard event == .mappingStart else { throw error(location, "'\(key)' expects a mapping, found \(event.noun)") }
        return location
    }

    private mutating func expectSequence(_ key: String) throws(ManifestError) -> SourceLocation {
        let (event, location) = try next()
        guard event == .sequenceStart else { throw error(location, "'\(key)' expects a list, found \(event.noun)") }
        return location
    }

    /// Reads the list under `key` element by element: `body` gets each mapping (its
    /// start already read) with its location, `scalar`, when given, each scalar
    /// element (not yet read); any other element is the error "`what`, found …".
    mutating func forEachMapping(
        in key: String, what: String, scalar: ((inout ManifestParser) throws(ManifestError) -> Void)? = nil,
        _ body: (inout ManifestParser, SourceLocation) throws(ManifestError) -> Void
    ) throws(ManifestError) {
        _ = try expectSequence(key)
        while true {
            let (event, location) = try peek()
            if event == .sequenceEnd {
                _ = try next()
                return
            }
            if case .scalar = event, let scalar {
                try scalar(&self)
                continue
            }
            guard event == .mappingStart else { throw error(location, "\(what), found \(event.noun)") }
            _ = try next()
            try body(&self, location)
        }
    }

    private mutating func next() throws(ManifestError) -> (YAMLEvent, SourceLocation) {
        if let peeked {
            self.peeked = nil
            return peeked
        }
        return try reader.next()
    }

    private mutating func peek() throws(ManifestError) -> (YAMLEvent, SourceLocation) {
        if let peeked { return peeked }
        let event = try reader.next()
        peeked = event
        return event
    }

    /// Replaces `${NAME}` with the environment variable's value, so secrets and
    /// hosts can stay out of the file.
    private func expandEnvironment(_ text: String, at location: SourceLocation) throws(ManifestError) -> String {
        guard text.contains(ascii: "${") else { return text }
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(ofASCII: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw error(location, "unterminated '${' in '\(text)'")
            }
            let name = String(rest[start.upperBound..<end])
            guard let value = options.environment[name] else {
                throw error(location, "environment variable '\(name)' is not set")
            }
            result += value
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    func error(_ location: SourceLocation, _ message: String) -> ManifestError {
        ManifestError(file: reader.sourceName, location: location, message: message)
    }
}

/// The keys of one mapping met so far, as bits over the keys it allows: items have
/// three or four keys each, and a set of strings hashed every one of them.
struct SeenKeys {
    let allowed: [String]
    private var bits: UInt64 = 0

    init(_ allowed: [String]) {
        precondition(allowed.count <= UInt64.bitWidth)
        self.allowed = allowed
    }

    func contains(_ key: String) -> Bool { allowed.firstIndex(of: key).map { bits & 1 << $0 != 0 } ?? false }

    /// Marks the key at `index` of `allowed`; false when it was already met.
    mutating func insert(at index: Int) -> Bool {
        defer { bits |= 1 << index }
        return bits & 1 << index == 0
    }
}
