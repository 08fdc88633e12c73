import Testing

@testable import JGMirror

/// Checksums lists as servers really write them.
@Suite struct ChecksumListParsingTests {
    private let hash = String(repeating: "ab", count: 32)

    @Test func windowsLineEndingsAndAByteOrderMarkAreRead() throws {
        let text = "\u{FEFF}\(hash)  a.bin\r\n\(hash) *b.bin\r\n# comment\r\n"
        let list = try SumsList(parsing: text)
        #expect(list.entries.map(\.name) == ["a.bin", "b.bin"])
        let sums = try ChecksumFiles.parse(text, baseURL: "http://h/rel/SHA256SUMS")
        #expect(sums == ["http://h/rel/a.bin": hash, "http://h/rel/b.bin": hash])
    }

    @Test func onlyASCIIHexDigitsMakeAHash() throws {
        let fullWidth = String(repeating: "\u{FF16}", count: 64)  // full-width "6"
        #expect(throws: SumsList.Problem.self) { try SumsList(parsing: "\(fullWidth)  a.bin\n") }
        #expect(try ChecksumFiles.parse("\(fullWidth)  a.bin\n", baseURL: "http://h/SUMS").isEmpty)
    }
}
