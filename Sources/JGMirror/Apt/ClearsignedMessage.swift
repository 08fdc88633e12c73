import Foundation

/// An OpenPGP cleartext-signed message, the form of apt's `InRelease` (RFC 4880 §7,
/// the cleartext signature framework): the `BEGIN PGP SIGNED MESSAGE` line, `Hash:`
/// headers, a blank line, the dash-escaped text, then the armored signature.
///
/// Read strictly, as apt reads InRelease: nothing but blank lines before the message
/// or after its signature, one message only, every line of the text that starts with
/// `-` dash-escaped. Text outside the signed part is never used: a file that has
/// some is refused, and `text` must also equal what gpgv verified
/// (`AptSignature.verifyInRelease`).
struct ClearsignedMessage: Sendable, Equatable {
    /// The signed text as gpg hashes it and `gpgv --output` writes it: dash-escapes
    /// removed, each line's trailing spaces and tabs removed, each line ended as in
    /// the file (`\n`, or `\r\n`).
    var text: [UInt8]
    /// The hash names the `Hash:` headers list (`SHA512`).
    var hashes: [String]
    /// The armored signature, its BEGIN and END lines included.
    var signature: [UInt8]

    static let beginMessage = Array("-----BEGIN PGP SIGNED MESSAGE-----".utf8)
    static let beginSignature = Array("-----BEGIN PGP SIGNATURE-----".utf8)
    static let endSignature = Array("-----END PGP SIGNATURE-----".utf8)

    /// Why a file is not one cleartext-signed message, and where.
    struct Problem: Error, Equatable {
        var line: Int
        var message: String
    }

    private enum Part { case before, headers, text, signature, after }

    init(parsing bytes: [UInt8]) throws(Problem) {
        (text, hashes, signature) = ([], [], [])
        var part = Part.before
        var number = 0
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            number += 1
            var line = bytes[start..<end]
            start = end + 1
            let crlf = line.last == 0x0D
            if crlf { line = line.dropLast() }
            let trimmed = Self.trimmingTrailingBlanks(line)
            switch part {
            case .before:
                guard !trimmed.isEmpty else { continue }
                guard trimmed.elementsEqual(Self.beginMessage) else {
                    throw Problem(line: number, message: "text before '-----BEGIN PGP SIGNED MESSAGE-----'")
                }
                part = .headers
            case .headers:
                if trimmed.isEmpty {
                    part = .text
                } else {
                    hashes += try Self.hashHeader(trimmed, line: number)
                }
            case .text:
                if trimmed.elementsEqual(Self.beginSignature) {
                    part = .signature
                    signature = Array(trimmed) + [0x0A]
                    continue
                }
                text += try Self.unescaped(trimmed, line: number)
                text += crlf ? [0x0D, 0x0A] : [0x0A]
            case .signature:
                signature += Array(trimmed) + [0x0A]
                if trimmed.elementsEqual(Self.endSignature) { part = .after }
            case .after:
                guard trimmed.isEmpty else {
                    throw Problem(line: number, message: "text after '-----END PGP SIGNATURE-----'")
                }
            }
        }
        guard part == .after else { throw Problem(line: number, message: Self.unfinished(part)) }
    }

    private static func unfinished(_ part: Part) -> String {
        switch part {
        case .before: "no '-----BEGIN PGP SIGNED MESSAGE-----' line"
        case .headers, .text: "no '-----BEGIN PGP SIGNATURE-----' line after the signed text"
        case .signature, .after: "no '-----END PGP SIGNATURE-----' line"
        }
    }

    private static func trimmingTrailingBlanks(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var line = line
        while let last = line.last, last == 0x20 || last == 0x09 { line = line.dropLast() }
        return line
    }

    /// The hash names of one `Hash: A, B` header; any other header is refused (the
    /// framework allows only `Hash`, and gpg warns about others).
    private static func hashHeader(_ line: ArraySlice<UInt8>, line number: Int) throws(Problem) -> [String] {
        let prefix = Array("Hash:".utf8)
        guard line.starts(with: prefix) else {
            throw Problem(line: number, message: "'\(Deb822Reader.shown(line))' where only 'Hash:' headers may stand")
        }
        let names = String(decoding: line.dropFirst(prefix.count), as: UTF8.self).split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !names.isEmpty else { throw Problem(line: number, message: "a 'Hash:' header that names no hash") }
        return names
    }

    /// A line of the text with its dash-escape (`- `) removed. A line that starts
    /// with `-` unescaped is refused: gpg escapes every such line, and an unescaped
    /// one is how a second message or signature hides in the text.
    private static func unescaped(_ line: ArraySlice<UInt8>, line number: Int) throws(Problem) -> ArraySlice<UInt8> {
        guard line.first == UInt8(ascii: "-") else { return line }
        guard line.dropFirst().first == UInt8(ascii: " ") else {
            throw Problem(line: number, message: "a line of the signed text starts with '-' without its dash-escape '- '")
        }
        return line.dropFirst(2)
    }
}
