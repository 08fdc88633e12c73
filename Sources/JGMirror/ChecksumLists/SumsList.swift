import Foundation

/// A `SHA256SUMS` / `SHA512SUMS` list as coreutils writes it: `HASH  NAME` or
/// `HASH *NAME` per line; blank lines and `#` comments are ignored.
struct SumsList: Sendable, Equatable {
    /// One listed file.
    struct Entry: Sendable, Equatable {
        /// The name as listed, without a leading `./`.
        var name: String
        /// Lower-case hex: 64 digits for SHA-256, 128 for SHA-512.
        var hash: String
        /// 1-based line in the list, for errors.
        var line: Int

        var isSHA512: Bool { hash.utf8.count == 128 }
    }

    var entries: [Entry]

    /// Parses `text`; a line that is neither blank, a comment nor `HASH NAME` is
    /// refused with its number, or skipped when `lenient` (a list whose signature
    /// failed is only read to name the items that fail with it).
    init(parsing text: String, lenient: Bool = false) throws(Problem) {
        entries = []
        var number = 0
        // `\r\n` is one Character in Swift, equal to neither `\n` nor `\r`: a list
        // written on Windows must split on it too. A byte-order mark is not a name.
        let body = text.hasPrefix("\u{FEFF}") ? Substring(text).dropFirst() : Substring(text)
        for rawLine in body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            do throws(Problem) {
                if let entry = try SumsList.entry(rawLine, number: number) { entries.append(entry) }
            } catch {
                if !lenient { throw error }
            }
        }
    }

    /// The entry on one line; nil for a blank line or a comment.
    private static func entry(_ rawLine: Substring, number: Int) throws(Problem) -> Entry? {
        var line = rawLine
        if line.hasSuffix("\r") { line = line.dropLast() }
        let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let hash = trimmed.prefix(while: \.isASCIIHexDigit)
        guard hash.count == 64 || hash.count == 128 else {
            throw .malformed(line: number, "expected 'HASH  NAME' with a 64- or 128-digit hex hash")
        }
        var name = trimmed.dropFirst(hash.count)
        guard name.first == " " || name.first == "\t" else {
            throw .malformed(line: number, "expected white space after the hash")
        }
        name = name.dropFirst()
        if name.first == " " || name.first == "*" { name = name.dropFirst() }
        while name.hasPrefix("./") { name = name.dropFirst(2) }
        guard !name.isEmpty else { throw .malformed(line: number, "no file name after the hash") }
        return Entry(name: String(name), hash: hash.lowercased(), line: number)
    }

    /// Why a list is refused.
    enum Problem: Error, Equatable {
        case malformed(line: Int, String)
    }
}
