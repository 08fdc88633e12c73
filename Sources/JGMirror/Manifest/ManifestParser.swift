import Foundation

/// Recursive descent over libyaml events into a `Manifest`, validating as it goes.
///
/// Each item is built from its events and appended; no tree of the document is ever
/// held, so memory grows with the item list only.
struct ManifestParser {
    let reader: YAMLEventReader
    let options: ManifestOptions
    var peeked: (YAMLEvent, SourceLocation)?
    /// Where the items' URLs and destinations are kept.
    var texts = TextArena.Builder()
    /// Destinations that cannot be normalised, by item index: found while each item is
    /// parsed, reported by `validateItems` in item order, as the checks across items are.
    var destinationFailures: [Int: ManifestError] = [:]
    /// libcurl's URL parser, one handle for every URL of the manifest.
    let curlURL = CurlURL()
    /// The origins of `hosts:` and where each is given.
    var hostsGiven: [String: SourceLocation] = [:]

    // The keys each mapping allows, from the option table (`Rules.table`), which also
    // writes the manifest reference (docs/manifest.md#item-keys) and `--help`.
    static let topKeys = Rules.keys(in: .top)
    /// The keys of `defaults`: the item options and the host options.
    static let defaultsKeys = Rules.keys(in: .defaults)
    static let itemKeys = Rules.keys(in: .item)
    /// The keys a `link:` item may have besides `link`: it fetches nothing.
    static let linkKeys = Set(Rules.keys(in: .link))
    static let checksumKeys = Rules.keys(in: .checksums)

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
                (manifest.defaults, manifest.hosts, manifest.keepRemoved) = try parseDefaults()
            case "hosts":
                manifest.originHosts = try parseHosts()
            case "checksums":
                manifest.checksums = try parseChecksumSources()
            case "sets":
                manifest.sets = try parseSets()
                let snapshots = manifest.sets.filter(\.snapshot)
                let whole = snapshots.filter(\.dest.isEmpty)
                manifest.publishesSnapshot = !whole.isEmpty
                manifest.snapshotKeep = whole.compactMap(\.keep).max()
                manifest.snapshotSets = snapshots.filter { !$0.dest.isEmpty }.map {
                    SnapshotSet(folder: $0.dest, keep: $0.keep, location: $0.location)
                }
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
        manifest.warnings += unusedHostsWarnings(manifest)
        manifest.portableNames = options.portableNames
        return manifest
    }

    /// `defaults:`: the item options, the host options, and `keep_removed`.
    mutating func parseDefaults() throws(ManifestError) -> (ItemSettings, HostOptions, Double?) {
        let start = try expectMapping("defaults")
        var settings = ItemSettings()
        var hosts = HostOptions()
        var keepRemoved: Double?
        var seen = SeenKeys(Self.defaultsKeys)
        while let (key, keyLocation) = try nextKey(in: "defaults", seen: &seen) {
            if try parseSetting(key, into: &settings) { continue }
            if key == "keep_removed" {
                keepRemoved = try readKeepRemoved()
                continue
            }
            guard try parseHostOption(key, into: &hosts) else {
                throw error(keyLocation, "unknown key '\(key)' in defaults")
            }
        }
        _ = start
        return (settings, hosts, keepRemoved)
    }

    /// `keep_removed`'s duration, within its bounds (docs/deletions.md#grace-period).
    mutating func readKeepRemoved() throws(ManifestError) -> Double {
        let (seconds, location) = try readDuration("keep_removed")
        if let problem = Rules.keepRemoved.problem(seconds) { throw error(location, "'keep_removed' \(problem)") }
        return seconds
    }

    /// Parses one of the host options of `defaults`; false when `key` is not one.
    mutating func parseHostOption(_ key: String, into hosts: inout HostOptions) throws(ManifestError) -> Bool {
        func duration(_ setting: Setting<Double>) throws(ManifestError) -> Double {
            let (seconds, location) = try readDuration(key)
            if let problem = setting.problem(seconds) { throw error(location, "'\(key)' \(problem)") }
            return seconds
        }
        switch key {
        case "connect_timeout": hosts.connectTimeout = try duration(Rules.connectTimeout)
        case "host_grace": hosts.hostGrace = try duration(Rules.hostGrace)
        case "max_wait": hosts.maxWait = try duration(Rules.maxWait)
        case "min_rate":
            let (text, location) = try readScalar(key, expecting: "a rate", tags: [.str, .int])
            guard let rate = Units.parseRate(text), Rules.minRate.range.contains(rate) else {
                throw error(location, "'min_rate' must be a rate such as 512, 1KiB or 64KiB/s, at least 1 byte/s, not '\(text)'")
            }
            hosts.minRate = rate
        default: return false
        }
        return true
    }

    mutating func parseItems(into items: inout ManifestItemChunks) throws(ManifestError) {
        try forEachMapping(in: "items", what: "each item is a mapping with at least 'url'") {
            parser, location throws(ManifestError) in
            items.append(try parser.parseItem(at: location, index: items.count))
        }
    }

    mutating func parseItem(at location: SourceLocation, index: Int) throws(ManifestError) -> ManifestItem {
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
            case "sha256", "sha512":
                try readChecksum(key, into: &item, seen: seen)
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
    /// inside the root (docs/safety.md#confinement-to-the-root); `conflicting` is the first key
    /// that only an item with a URL may have.
    mutating func linkItem(
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
        item.urlLocation = target.1
        return item
    }

    /// Parses one of the keys `defaults` and items share; false when `key` is not one.
    mutating func parseSetting(_ key: String, into settings: inout ItemSettings) throws(ManifestError) -> Bool {
        switch key {
        case "connections": settings.connections = try readInt(key, range: Rules.connections.range).0
        case "retries": settings.retries = try readInt(key, range: Rules.retries).0
        case "min_segment":
            let (size, location) = try readSize(key)
            if let problem = Rules.minSegment.problem(size) { throw error(location, "'min_segment' \(problem)") }
            settings.minSegment = size
        case "timeout":
            let (seconds, location) = try readDuration(key)
            if let problem = Rules.timeout.problem(seconds) { throw error(location, "'timeout' \(problem)") }
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

    mutating func expectMapping(_ key: String) throws(ManifestError) -> SourceLocation {
        let (event, location) = try next()
        guard event == .mappingStart else { throw error(location, "'\(key)' expects a mapping, found \(event.noun)") }
        return location
    }

    mutating func expectSequence(_ key: String) throws(ManifestError) -> SourceLocation {
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

    mutating func next() throws(ManifestError) -> (YAMLEvent, SourceLocation) {
        if let peeked {
            self.peeked = nil
            return peeked
        }
        return try reader.next()
    }

    mutating func peek() throws(ManifestError) -> (YAMLEvent, SourceLocation) {
        if let peeked { return peeked }
        let event = try reader.next()
        peeked = event
        return event
    }

    /// Replaces `${NAME}` with the environment variable's value, so secrets and
    /// hosts can stay out of the file.
    func expandEnvironment(_ text: String, at location: SourceLocation) throws(ManifestError) -> String {
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
