import Foundation

/// Reads the paragraphs of a Debian control file one at a time, from bytes that may
/// come from anyone: any byte sequence gives paragraphs or a `Problem` with its line,
/// never a crash, and memory stays within the input plus `Limits`.
///
/// Rules (deb822(5), as apt reads Release, Packages and Sources): paragraphs are
/// separated by lines that are empty or hold only spaces and tabs; a field line is
/// `Name: value` with a name of printable ASCII other than `:` that does not start
/// with `#` or `-`; a line that starts with a space or tab continues the field
/// before it; a line that starts with `#` is a comment; `\r\n` ends a line as `\n`
/// does. A field may appear once per paragraph.
struct Deb822Reader {
    /// Bounds on what one paragraph may hold.
    struct Limits: Sendable {
        /// Longest field name: deb822's names are words, not data.
        var maxNameBytes = 256
        /// Most fields in one paragraph: a Packages stanza has about 20.
        var maxFields = 1024
        /// Largest value kept (first line and continuation lines together): Debian's
        /// largest, a Release's SHA256 section, is well under 1 MiB.
        var maxValueBytes = 32 << 20
    }

    /// Why the input is not a control file, and where.
    struct Problem: Error, Equatable, Sendable {
        /// 1-based line.
        var line: Int
        var message: String
    }

    private let bytes: [UInt8]
    /// Lower-cased names of the fields to keep, as bytes: the name of every other
    /// field (most of a Packages stanza) is compared, never made a `String`. nil
    /// keeps every field.
    private let wanted: [[UInt8]]?
    private let limits: Limits
    private var offset = 0
    private var lineNumber = 0

    init(_ bytes: [UInt8], wanted: Set<String>? = nil, limits: Limits = Limits()) {
        self.bytes = bytes
        self.wanted = wanted.map { names in names.map { Array($0.lowercased().utf8) } }
        self.limits = limits
    }

    /// Every paragraph of `bytes`.
    static func paragraphs(_ bytes: [UInt8], wanted: Set<String>? = nil, limits: Limits = Limits()) throws(Problem)
        -> [Deb822Paragraph]
    {
        var reader = Deb822Reader(bytes, wanted: wanted, limits: limits)
        var paragraphs: [Deb822Paragraph] = []
        while let paragraph = try reader.next() { paragraphs.append(paragraph) }
        return paragraphs
    }

    /// The next line without its ending (`\n`, or `\r\n`), or nil at the end.
    private mutating func nextLine() -> ArraySlice<UInt8>? {
        guard offset < bytes.count else { return nil }
        let start = offset
        // memchr: a byte loop over an array is slow in debug builds, which the tests run.
        let newline = bytes.withUnsafeBufferPointer { buffer -> Int? in
            guard let base = buffer.baseAddress else { return nil }
            return memchr(base + start, 0x0A, buffer.count - start).map {
                base.distance(to: $0.assumingMemoryBound(to: UInt8.self))
            }
        }
        var end = newline ?? bytes.count
        offset = newline.map { $0 + 1 } ?? end
        lineNumber += 1
        if end > start, bytes[end - 1] == 0x0D { end -= 1 }
        return bytes[start..<end]
    }

    private static func isBlank(_ line: ArraySlice<UInt8>) -> Bool {
        line.allSatisfy { $0 == 0x20 || $0 == 0x09 }
    }

    /// The next paragraph, or nil when only blank lines and comments are left.
    mutating func next() throws(Problem) -> Deb822Paragraph? {
        // Built in locals and appended to in place: a long SHA256 section costs one
        // append a line, not a copy of the lines before it.
        var fields: [Deb822Paragraph.Field] = []
        var start: Int?
        var count = 0
        var valueBytes = 0
        var seen = Set<String>()
        // Whether the field being continued is kept (a wanted one).
        var keeping = false
        while let line = nextLine() {
            if Self.isBlank(line) {
                if start != nil { break }
                continue
            }
            if line.first == UInt8(ascii: "#") { continue }
            if line.first == 0x20 || line.first == 0x09 {
                guard start != nil else {
                    throw Problem(line: lineNumber, message: "a continuation line (starting with white space) outside a field")
                }
                guard keeping else { continue }
                let text = try Self.text(Self.trimmed(line), line: lineNumber)
                valueBytes += text.utf8.count
                guard valueBytes <= limits.maxValueBytes else { throw tooLong() }
                fields[fields.count - 1].continuation.append(.init(text: text, number: lineNumber))
                continue
            }
            if start == nil { start = lineNumber }
            count += 1
            guard count <= limits.maxFields else {
                throw Problem(line: lineNumber, message: "more than \(limits.maxFields) fields in one paragraph")
            }
            let (nameBytes, rest) = try field(line)
            keeping = wanted.map { $0.contains { Self.equalFolded(nameBytes, $0) } } ?? true
            guard keeping else { continue }
            let name = String(decoding: nameBytes, as: UTF8.self)
            guard seen.insert(name.lowercased()).inserted else {
                throw Problem(line: lineNumber, message: "field '\(name)' appears twice in one paragraph")
            }
            let value = try Self.text(Self.trimmed(rest), line: lineNumber)
            valueBytes += value.utf8.count
            guard valueBytes <= limits.maxValueBytes else { throw tooLong() }
            fields.append(.init(name: name, value: value, continuation: [], line: lineNumber))
        }
        return start.map { Deb822Paragraph(fields: fields, line: $0) }
    }

    private func tooLong() -> Problem {
        Problem(line: lineNumber, message: "a paragraph's values exceed \(limits.maxValueBytes) bytes")
    }

    /// Whether the ASCII `name` is `lowered` without regard to case.
    private static func equalFolded(_ name: ArraySlice<UInt8>, _ lowered: [UInt8]) -> Bool {
        name.count == lowered.count
            && zip(name, lowered).allSatisfy { ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 }
    }

    /// A field line's name (checked, ASCII) and the bytes after its colon.
    private func field(_ line: ArraySlice<UInt8>) throws(Problem) -> (ArraySlice<UInt8>, ArraySlice<UInt8>) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            throw Problem(line: lineNumber, message: "expected 'Name: value'")
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty else { throw Problem(line: lineNumber, message: "a field without a name") }
        guard name.count <= limits.maxNameBytes else {
            throw Problem(line: lineNumber, message: "a field name longer than \(limits.maxNameBytes) bytes")
        }
        // deb822(5): printable US-ASCII other than ':' (space excluded), not starting with '-'.
        guard name.allSatisfy({ (0x21...0x7E).contains($0) }), name.first != UInt8(ascii: "-") else {
            throw Problem(line: lineNumber, message: "field name '\(Self.shown(name))' has a character deb822 does not allow")
        }
        return (name, line[(colon + 1)...])
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    /// A kept value as text: it must be UTF-8 (a path or a hash read from it is compared byte for byte).
    private static func text(_ bytes: ArraySlice<UInt8>, line: Int) throws(Problem) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Problem(line: line, message: "a value that is not UTF-8")
        }
        return text
    }

    /// Bytes for an error line: printable ASCII kept, anything else as `?`, at most 64.
    static func shown(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix(64).map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
