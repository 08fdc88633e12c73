/// One paragraph (stanza) of a Debian control file — `Release`, `Packages`,
/// `Sources` — in deb822(5)'s syntax: `Name: value` fields, a value continued on
/// lines that start with a space or a tab.
struct Deb822Paragraph: Sendable, Equatable {
    /// One line of a multi-line value, trimmed, with its line number for errors.
    struct Line: Sendable, Equatable {
        var text: String
        var number: Int
    }

    /// One field.
    struct Field: Sendable, Equatable {
        /// The name as written; fields are looked up without case (deb822(5)).
        var name: String
        /// The text after the colon on the field's first line, trimmed (empty for a
        /// field such as `SHA256:` whose value is all on continuation lines).
        var value: String
        /// The continuation lines, trimmed; a line of one `.` stands for an empty line.
        var continuation: [Line]
        /// The field's first line.
        var line: Int
    }

    var fields: [Field]
    /// The paragraph's first line.
    var line: Int

    /// The field called `name`, compared without case.
    func field(_ name: String) -> Field? {
        fields.first { $0.name.utf8.count == name.utf8.count && Self.foldedEqual($0.name, name) }
    }

    /// ASCII case-insensitive equality: field names are ASCII (`Deb822Reader` checks).
    private static func foldedEqual(_ a: String, _ b: String) -> Bool {
        func lower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        return zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }

    /// The first-line value of the field called `name`.
    subscript(_ name: String) -> String? { field(name)?.value }
}
