import Foundation

/// Removes secrets from every string that reaches a report or a log line.
///
/// Three kinds of secret exist (docs/safety.md#redaction): credentials embedded in URLs
/// (`user:pass@`), the values of headers the manifest names in `redact`, and the
/// values of query parameters with those names (`?token=…`). The redactor knows the
/// secret values themselves, so it also cleans libcurl's error texts, which may quote
/// a URL or a header; and it masks a query parameter of such a name in any URL of a
/// text, so a redirect's URL with another token is masked too.
public struct Redactor: Sendable {
    private var secrets: [String]
    /// `redact`'s names, lower-cased: query parameters to mask, whatever their value.
    private var names: Set<String>

    /// A redactor that knows the values of `headers` and of the query parameters of
    /// `urls` whose names appear in `redact` (compared without regard to case).
    public init(headers: [HTTPHeader] = [], redact: [String] = [], urls: [String] = []) {
        let names = Set(redact.map { $0.lowercased() })
        self.names = names
        secrets = headers.filter { names.contains($0.name.lowercased()) && !$0.value.isEmpty }.map(\.value)
        guard !names.isEmpty else { return }
        for url in urls {
            for (name, value) in Self.queryParameters(of: url) where !value.isEmpty && names.contains(name.lowercased()) {
                secrets.append(String(value))
            }
        }
    }

    /// `url` as reports and logs may show it: credentials and the values of query
    /// parameters named in `redact` replaced by `***`.
    public func redact(url: String) -> String {
        Self.maskQuery(in: Redactor.redactURL(url), names: names)
    }

    /// Returns `url` with any `user:password@` part replaced by `***@`.
    public static func redactURL(_ url: String) -> String {
        guard url.utf8.contains(UInt8(ascii: "@")), let authority = URLAuthority(url), let at = authority.at else {
            return url
        }
        return String(url[..<authority.start]) + "***" + String(url[at...])
    }

    /// Returns `url` with its credentials and the value of every query parameter
    /// replaced by `***`: for messages written before the manifest's `redact` names
    /// are known, or outside any item's (a malformed URL, a checksums list), where a
    /// token in the query could otherwise be printed.
    public static func redactURLAndQuery(_ url: String) -> String {
        guard let question = url.firstIndex(of: "?") else { return redactURL(url) }
        let fragment = url[question...].firstIndex(of: "#") ?? url.endIndex
        let pairs = url[url.index(after: question)..<fragment].split(separator: "&", omittingEmptySubsequences: false).map {
            pair in
            pair.firstIndex(of: "=").map { pair[..<$0] + "=***" } ?? String(pair)
        }
        return redactURL(String(url[..<question])) + "?" + pairs.joined(separator: "&") + url[fragment...]
    }

    /// Returns `text` with the credentials and every query value of each URL in it
    /// masked: for messages about lists and signatures, which belong to no item's
    /// `redact` (a library's error may quote the URL it failed on, or a redirect's).
    public static func redactURLsAndQueries(in text: String) -> String {
        maskQuery(in: redactAllURLs(in: text), names: nil)
    }

    /// Returns `text` with URL credentials, known secret values and the query
    /// parameters named in `redact` masked.
    public func redact(_ text: String) -> String {
        var result = text
        for secret in secrets {
            result = result.replacingOccurrences(of: secret, with: "***")
        }
        return Self.maskQuery(in: Redactor.redactAllURLs(in: result), names: names)
    }

    /// The `name=value` pairs of `url`'s query (between `?` and `#`), undecoded.
    static func queryParameters(of url: String) -> [(Substring, Substring)] {
        guard let question = url.firstIndex(of: "?") else { return [] }
        let query = url[url.index(after: question)...].prefix { $0 != "#" }
        return query.split(separator: "&").compactMap { pair in
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            return (pair[..<equals], pair[pair.index(after: equals)...])
        }
    }

    /// Replaces by `***` the value of every `name=value` that follows a `?` or `&` in
    /// `text` and whose name is in `names` (lower-case; nil: any name). A value ends
    /// at `&`, `#`, white space, a quote, `<`, `>` or `)`, which cannot be part of a
    /// URL as texts quote it.
    static func maskQuery(in text: String, names: Set<String>?) -> String {
        guard names?.isEmpty != true, text.utf8.contains(UInt8(ascii: "=")) else { return text }
        let bytes = Array(text.utf8)
        func ends(_ byte: UInt8) -> Bool {
            byte <= 32 || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\"")
                || byte == UInt8(ascii: "'") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">")
                || byte == UInt8(ascii: ")")
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            output.append(byte)
            index += 1
            guard byte == UInt8(ascii: "?") || byte == UInt8(ascii: "&") else { continue }
            var equals = index
            while equals < bytes.count, bytes[equals] != UInt8(ascii: "="), !ends(bytes[equals]) { equals += 1 }
            guard equals < bytes.count, bytes[equals] == UInt8(ascii: "="),
                names?.contains(String(decoding: bytes[index..<equals], as: UTF8.self).lowercased()) ?? true
            else { continue }
            output += bytes[index...equals]
            output += Array("***".utf8)
            index = equals + 1
            while index < bytes.count, !ends(bytes[index]) { index += 1 }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Masks credentials of every URL that appears inside free text.
    static func redactAllURLs(in text: String) -> String {
        guard text.contains("@"), text.contains(ascii: "://") else { return text }
        var output = ""
        var rest = Substring(text)
        while let schemeEnd = rest.range(ofASCII: "://") {
            output += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            let authorityEnd =
                rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " || $0 == "'" || $0 == "\"" })
                ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                output += "***"
                rest = rest[at...]
            }
        }
        return output + rest
    }
}

/// One HTTP request header, order preserved as written.
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Parses `Name: value`, as `--header` takes it; nil for anything that could not
    /// be sent as one header line.
    public init?(line: String) {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard Self.isValidName(name), Self.isValidValue(value) else { return nil }
        self.name = name
        self.value = value
    }

    /// An RFC 9110 token: visible ASCII without separators.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && $0.value > 32 && $0.value < 127 && !"\"(),/:;<=>?@[\\]{}".unicodeScalars.contains($0)
            }
    }

    /// No CR, LF, NUL or other control character (a tab is allowed): one header line.
    public static func isValidValue(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0 == "\t" || ($0.value >= 32 && $0.value != 127) }
    }
}
