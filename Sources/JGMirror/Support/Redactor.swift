import Foundation

/// Removes secrets from every string that reaches a report or a log line.
///
/// Two kinds of secret exist (SPEC §8): credentials embedded in URLs (`user:pass@`)
/// and the values of headers the manifest names in `redact`. The redactor knows
/// the secret values themselves, so it also cleans libcurl's error texts, which
/// may quote a URL or a header.
public struct Redactor: Sendable {
    private var secrets: [String]

    /// A redactor that knows the values of `headers` whose names appear in `redact`.
    public init(headers: [HTTPHeader] = [], redact: [String] = []) {
        let names = Set(redact.map { $0.lowercased() })
        secrets = headers.filter { names.contains($0.name.lowercased()) && !$0.value.isEmpty }.map(\.value)
    }

    /// Returns `url` with any `user:password@` part replaced by `***@`.
    public static func redactURL(_ url: String) -> String {
        guard url.utf8.contains(UInt8(ascii: "@")), let authority = URLAuthority(url), let at = authority.at else {
            return url
        }
        return String(url[..<authority.start]) + "***" + String(url[at...])
    }

    /// Returns `text` with URL credentials and known secret values masked.
    public func redact(_ text: String) -> String {
        var result = text
        for secret in secrets {
            result = result.replacingOccurrences(of: secret, with: "***")
        }
        return Redactor.redactAllURLs(in: result)
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
            && name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 32 && $0.value < 127 && !"\"(),/:;<=>?@[\\]{}".unicodeScalars.contains($0) }
    }

    /// No CR, LF, NUL or other control character (a tab is allowed): one header line.
    public static func isValidValue(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0 == "\t" || ($0.value >= 32 && $0.value != 127) }
    }
}
