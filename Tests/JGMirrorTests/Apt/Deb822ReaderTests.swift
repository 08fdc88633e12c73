import PropertyBased
import Testing

@testable import JGMirror

/// deb822 paragraphs as Release, Packages and Sources files hold them, and as hostile
/// bytes try to break them.
@Suite struct Deb822ReaderTests {
    private func paragraphs(_ text: String, wanted: Set<String>? = nil) throws -> [Deb822Paragraph] {
        try Deb822Reader.paragraphs(Array(text.utf8), wanted: wanted)
    }

    private func problem(_ text: String, wanted: Set<String>? = nil) -> Deb822Reader.Problem? {
        do {
            _ = try Deb822Reader.paragraphs(Array(text.utf8), wanted: wanted)
            return nil
        } catch { return error }
    }

    @Test func fieldsContinuationLinesAndParagraphs() throws {
        let text = """
            Package: hello
            Version: 2.10-3
            Description: the classic greeting
             GNU hello prints a greeting.
             .
             It is an example.

            Package: world
            Filename: pool/main/w/world/world_1_all.deb

            """
        let result = try paragraphs(text)
        #expect(result.count == 2)
        #expect(result[0]["package"] == "hello")
        #expect(result[0]["VERSION"] == "2.10-3")
        let description = try #require(result[0].field("Description"))
        #expect(description.value == "the classic greeting")
        #expect(description.continuation.map(\.text) == ["GNU hello prints a greeting.", ".", "It is an example."])
        #expect(description.continuation.map(\.number) == [4, 5, 6])
        #expect(result[1].line == 8)
        #expect(result[1].field("Filename")?.line == 9)
    }

    @Test func aChecksumSectionStartsWithAnEmptyValue() throws {
        let text = "Date: Sat, 10 Jun 2023 08:57:04 UTC\nSHA256:\n abc 12 main/x\n\tdef 3 main/y  \n"
        let sha256 = try #require(try paragraphs(text).first?.field("SHA256"))
        #expect(sha256.value.isEmpty)
        #expect(sha256.continuation.map(\.text) == ["abc 12 main/x", "def 3 main/y"])
    }

    @Test func windowsLineEndingsBlankLinesWithSpacesAndCommentsAreRead() throws {
        let text = "# a comment\r\n\r\nPackage: a\r\nSize: 1\r\n  \t \r\nPackage: b\r\n# between fields\r\nSize: 2\r\n\r\n\r\n"
        let result = try paragraphs(text)
        #expect(result.map { $0["Package"] } == ["a", "b"])
        #expect(result.map { $0["Size"] } == ["1", "2"])
    }

    @Test func onlyWantedFieldsAreKeptAndCheckedForUTF8() throws {
        var bytes =
            Array("Package: a\nMaintainer: J".utf8) + [0xE9, 0x72, 0xF4, 0x6D, 0x65] + Array("\nFilename: p/a.deb\n".utf8)
        let kept = try Deb822Reader.paragraphs(bytes, wanted: ["filename", "Package"])
        #expect(kept.first?.fields.map(\.name) == ["Package", "Filename"])
        // The same Latin-1 byte in a field that is read is refused, with its line.
        bytes = Array("Package: a\nFilename: p/".utf8) + [0xE9] + Array(".deb\n".utf8)
        #expect(throws: Deb822Reader.Problem(line: 2, message: "a value that is not UTF-8")) {
            try Deb822Reader.paragraphs(bytes, wanted: ["Filename"])
        }
    }

    @Test(arguments: [
        (" continued\nPackage: a\n", 1, "a continuation line (starting with white space) outside a field"),
        ("Package: a\nno colon here\n", 2, "expected 'Name: value'"),
        ("Package: a\n: empty name\n", 2, "a field without a name"),
        ("Package: a\n-Bad: x\n", 2, "field name '-Bad' has a character deb822 does not allow"),
        ("Package: a\nSp ace: x\n", 2, "field name 'Sp ace' has a character deb822 does not allow"),
        ("Package: a\nfilename: x\nFilename: y\n", 3, "field 'Filename' appears twice in one paragraph"),
    ])
    func malformedLinesAreRefusedWithTheirLine(text: String, line: Int, message: String) {
        #expect(problem(text) == Deb822Reader.Problem(line: line, message: message))
    }

    @Test func aDuplicateOfAFieldNotReadIsNoProblem() throws {
        #expect(problem("Package: a\nTag: x\nTag: y\n", wanted: ["Package"]) == nil)
    }

    @Test func limitsBoundWhatOneParagraphHolds() {
        var limits = Deb822Reader.Limits()
        limits.maxFields = 3
        let many = (1...4).map { "F\($0): x" }.joined(separator: "\n")
        #expect(throws: Deb822Reader.Problem(line: 4, message: "more than 3 fields in one paragraph")) {
            try Deb822Reader.paragraphs(Array(many.utf8), limits: limits)
        }
        limits = Deb822Reader.Limits()
        limits.maxValueBytes = 10
        #expect(throws: Deb822Reader.Problem(line: 2, message: "a paragraph's values exceed 10 bytes")) {
            try Deb822Reader.paragraphs(Array("A: 12345\nB: 123456\n".utf8), limits: limits)
        }
        let longName = String(repeating: "N", count: 300) + ": x"
        #expect(throws: Deb822Reader.Problem(line: 1, message: "a field name longer than 256 bytes")) {
            try Deb822Reader.paragraphs(Array(longName.utf8))
        }
    }

    @Test func emptyInputAndOnlyBlankLinesHaveNoParagraph() throws {
        #expect(try paragraphs("").isEmpty)
        #expect(try paragraphs("\n\n  \n# only a comment\n").isEmpty)
    }

    /// Bytes drawn mostly from the ones the syntax turns on, so that random input
    /// reaches every branch: any of them gives paragraphs or a located problem.
    @Test func anyBytesGiveParagraphsOrALocatedProblem() async {
        let alphabet: [UInt8] = Array("Aa:-# .\t\n\n\r9".utf8) + [0x00, 0x80, 0xC3, 0xA9, 0xFF]
        await propertyCheck(count: 400, input: Gen.int(in: 0...(alphabet.count - 1)).array(of: 0...300)) { picks in
            let bytes = picks.map { alphabet[$0] }
            let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).count
            do throws(Deb822Reader.Problem) {
                let result = try Deb822Reader.paragraphs(bytes)
                for paragraph in result {
                    #expect(!paragraph.fields.isEmpty)
                    #expect((1...lines).contains(paragraph.line))
                }
            } catch {
                #expect((1...lines).contains(error.line))
            }
        }
    }

    /// Paragraphs written out as deb822 are read back as they were.
    @Test func writtenParagraphsAreReadBack() async {
        let word = Gen.int(in: 0...25).map { Character(UnicodeScalar(UInt8(97 + $0))) }.array(of: 1...8).map { String($0) }
        await propertyCheck(count: 200, input: word.array(of: 1...6).array(of: 1...5), word.array(of: 0...4)) {
            values, continuation in
            var text = ""
            for (index, paragraph) in values.enumerated() {
                for (field, value) in paragraph.enumerated() { text += "F\(field): \(value)\n" }
                if index == 0 { text += "Long: first\n" + continuation.map { " \($0)\n" }.joined() }
                text += "\n"
            }
            let read = try? Deb822Reader.paragraphs(Array(text.utf8))
            #expect(read?.map { $0.fields.filter { $0.name != "Long" }.map(\.value) } == values)
            #expect(read?.first?.field("Long")?.continuation.map(\.text) == continuation)
        }
    }
}
