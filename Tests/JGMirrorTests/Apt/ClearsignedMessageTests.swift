import PropertyBased
import Testing

@testable import JGMirror

/// InRelease's framing (the cleartext signature framework), read strictly.
@Suite struct ClearsignedMessageTests {
    static let signature = """
        -----BEGIN PGP SIGNATURE-----

        iHUEARYKAB0WIQQsvW2Getwxmk0NUNCh1xLqYRI5ywUCawuNTwAKCRCh1xLqYRI5
        =67pD
        -----END PGP SIGNATURE-----

        """

    private func message(_ body: String, headers: String = "Hash: SHA512\n", before: String = "", after: String = "")
        -> [UInt8]
    {
        Array((before + "-----BEGIN PGP SIGNED MESSAGE-----\n" + headers + "\n" + body + Self.signature + after).utf8)
    }

    private func problem(_ bytes: [UInt8]) -> ClearsignedMessage.Problem? {
        do {
            _ = try ClearsignedMessage(parsing: bytes)
            return nil
        } catch { return error }
    }

    @Test func theSignedTextIsWhatGpgHashes() throws {
        let body = "Origin: x\n- - dashed\n- From here\ntrailing   \n- -----BEGIN fake\n\nlast\n"
        let read = try ClearsignedMessage(parsing: message(body, headers: "Hash: SHA256, SHA512\nHash: SHA1\n"))
        #expect(
            String(decoding: read.text, as: UTF8.self) == "Origin: x\n- dashed\nFrom here\ntrailing\n-----BEGIN fake\n\nlast\n")
        #expect(read.hashes == ["SHA256", "SHA512", "SHA1"])
        #expect(String(decoding: read.signature, as: UTF8.self) == Self.signature)
    }

    @Test func windowsLineEndingsStayInTheTextAndBlankLinesMayFrameIt() throws {
        let text = "\n  \n-----BEGIN PGP SIGNED MESSAGE-----\r\nHash: SHA512\r\n\r\na\r\nb \r\n" + Self.signature + "\n\t\n"
        let read = try ClearsignedMessage(parsing: Array(text.utf8))
        #expect(read.text == Array("a\r\nb\r\n".utf8))
    }

    @Test(arguments: [
        ("Suite: evil\n", "", 1, "text before '-----BEGIN PGP SIGNED MESSAGE-----'"),
        ("", "Suite: evil\n", 10, "text after '-----END PGP SIGNATURE-----'"),
        ("", "-----BEGIN PGP SIGNED MESSAGE-----\n", 10, "text after '-----END PGP SIGNATURE-----'"),
    ])
    func textOutsideTheSignedPartIsRefused(before: String, after: String, line: Int, reason: String) {
        let bytes = message("Suite: stable\n", before: before, after: after)
        #expect(problem(bytes) == ClearsignedMessage.Problem(line: line, message: reason))
    }

    @Test func anUnescapedDashLineAndOtherHeadersAreRefused() {
        #expect(
            problem(message("Suite: a\n-----BEGIN PGP SIGNATURE\n"))
                == .init(line: 5, message: "a line of the signed text starts with '-' without its dash-escape '- '"))
        #expect(
            problem(message("Suite: a\n", headers: "Hash: SHA512\nComment: hi\n"))
                == .init(line: 3, message: "'Comment: hi' where only 'Hash:' headers may stand"))
        #expect(
            problem(message("Suite: a\n", headers: "Hash:\n"))
                == .init(line: 2, message: "a 'Hash:' header that names no hash"))
    }

    @Test func anUnfinishedMessageIsRefused() {
        #expect(problem([]) == .init(line: 0, message: "no '-----BEGIN PGP SIGNED MESSAGE-----' line"))
        #expect(
            problem(Array("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nSuite: a\n".utf8))
                == .init(line: 4, message: "no '-----BEGIN PGP SIGNATURE-----' line after the signed text"))
        let cut = String(decoding: message("Suite: a\n"), as: UTF8.self).replacingOccurrences(
            of: "-----END PGP SIGNATURE-----\n", with: "")
        #expect(problem(Array(cut.utf8)) == .init(line: 8, message: "no '-----END PGP SIGNATURE-----' line"))
    }

    /// Any text, dash-escaped as gpg writes it, is read back as gpg hashes it.
    @Test func escapedTextIsReadBack() async {
        let alphabet = Array("a -#\t:".utf8)
        let line = Gen.int(in: 0...(alphabet.count - 1)).array(of: 0...12).map {
            String(decoding: $0.map { alphabet[$0] }, as: UTF8.self)
        }
        await propertyCheck(count: 300, input: line.array(of: 0...10)) { lines in
            let escaped = lines.map { ($0.hasPrefix("-") || $0.hasPrefix("From ") ? "- " : "") + $0 + "\n" }.joined()
            let read = try? ClearsignedMessage(parsing: message(escaped))
            let expected = lines.map { String($0.reversed().drop { $0 == " " || $0 == "\t" }.reversed()) + "\n" }.joined()
            #expect(read.map { String(decoding: $0.text, as: UTF8.self) } == expected)
        }
    }

    /// Random bytes around the framing lines never crash the reader.
    @Test func anyBytesGiveAMessageOrALocatedProblem() async {
        let pieces = [
            "-----BEGIN PGP SIGNED MESSAGE-----\n", "Hash: SHA512\n", "\n", "- ", "-", "a", "\r", " ", "\u{0}",
            "-----BEGIN PGP SIGNATURE-----\n", "-----END PGP SIGNATURE-----\n",
        ]
        await propertyCheck(count: 400, input: Gen.int(in: 0...(pieces.count - 1)).array(of: 0...40)) { picks in
            let bytes = Array(picks.map { pieces[$0] }.joined().utf8)
            do throws(ClearsignedMessage.Problem) {
                let read = try ClearsignedMessage(parsing: bytes)
                #expect(read.text.count <= bytes.count)
            } catch {
                #expect(error.line >= 0 && error.line <= bytes.count + 1)
            }
        }
    }
}
