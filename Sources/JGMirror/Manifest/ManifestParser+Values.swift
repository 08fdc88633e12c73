import Foundation

/// Typed values: a key's scalar read as a string, number, size, duration, flag,
/// list or headers, with the error naming where it stands.
extension ManifestParser {
    /// A key's scalar; a core tag on it must be one of `tags`, those that agree with
    /// `kind` (docs/manifest.md#values): `connections: !!str 3` says the value is not
    /// a number, and is refused rather than read as one.
    mutating func readScalar(
        _ key: String, expecting kind: String, tags: Set<YAMLTag> = [.str]
    ) throws(ManifestError) -> (String, SourceLocation) {
        let (event, location) = try next()
        switch event {
        case .scalar(let text, let tag):
            if let tag, !tags.contains(tag) {
                throw error(location, "'\(key)' expects \(kind), not a value tagged \(tag.spelling)")
            }
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
        let (text, location) = try readScalar(key, expecting: "a whole number", tags: [.int])
        guard let value = Units.parseWholeNumber(text, negative: range.lowerBound < 0), range.contains(value) else {
            if range.upperBound == Int.max || range.lowerBound == Int.min {
                throw error(location, "'\(key)' must be a whole number, not '\(text)'")
            }
            throw error(
                location, "'\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return (value, location)
    }

    mutating func readSize(_ key: String) throws(ManifestError) -> (Int64, SourceLocation) {
        let (text, location) = try readScalar(key, expecting: "a size", tags: [.str, .int])
        guard let value = Units.parseSize(text) else {
            throw error(location, "'\(key)' must be a size such as 4096, 512KiB, 1MiB or 2GB, not '\(text)'")
        }
        if let problem = Rules.sizeProblem(value) { throw error(location, "'\(key)' \(problem), not '\(text)'") }
        return (value, location)
    }

    mutating func readDuration(_ key: String) throws(ManifestError) -> (Double, SourceLocation) {
        let (text, location) = try readScalar(key, expecting: "a duration", tags: [.str, .int, .float])
        guard let value = Units.parseDuration(text) else {
            throw error(location, "'\(key)' must be a duration such as 500ms, 30s or 2m, not '\(text)'")
        }
        return (value, location)
    }

    mutating func readBool(_ key: String) throws(ManifestError) -> Bool {
        let (text, location) = try readScalar(key, expecting: "true or false", tags: [.bool])
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

    mutating func readHeaders(_ key: String) throws(ManifestError) -> [HTTPHeader] {
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

    /// An item's `sha256` or `sha512` (`key`): hexadecimal digits of the digest's
    /// length, and not both in one item (`seen`: the keys read before it).
    mutating func readChecksum(_ key: String, into item: inout ManifestItem, seen: SeenKeys) throws(ManifestError) {
        let (text, location) = try readString(key)
        let (digits, other) = key == "sha256" ? (64, "sha512") : (128, "sha256")
        guard let hasUpperCase = Rules.hexCase(text, count: digits) else {
            throw error(location, "'\(key)' must be \(digits) hexadecimal digits, got \(Self.quoted(text))")
        }
        guard !seen.contains(other) else { throw error(location, "give 'sha256' or 'sha512', not both") }
        // Lower-cased only when it has an upper-case digit: no copy per item otherwise.
        let digest = hasUpperCase ? text.lowercased() : text
        if key == "sha256" {
            item.packedSHA256 = PackedSHA256(digest)
            item.sha256Location = location
        } else {
            item.sha512 = digest
        }
    }
}
