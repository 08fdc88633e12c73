import Foundation
import Testing

@testable import JGMirror

/// The ASCII searches and prefix checks the parsers use on `String`s, byte by byte.
@Suite struct TextSearchTests {
    @Test func findsASCIINeedlesByByteInStringsAndSubstrings() {
        let text = "héllo ${A}://x${B}"
        let range = text.range(ofASCII: "${")
        #expect(range.map { String(text[$0]) } == "${")
        #expect(range.map { text.distance(from: text.startIndex, to: $0.lowerBound) } == 6)
        #expect(text.contains(ascii: "://") && text.contains(ascii: "${B}") && !text.contains(ascii: "${C"))
        #expect(!"ab".contains(ascii: "abc") && !"".contains(ascii: "a") && "aab".contains(ascii: "ab"))
        let tail = text[text.index(text.startIndex, offsetBy: 8)...]
        #expect(tail.range(ofASCII: "${").map { String(tail[$0.lowerBound...]) } == "${B}")
    }

    @Test func comparesASCIIPrefixesWithoutCase() {
        #expect("HTTPS://h/x".hasPrefix(asciiCaseInsensitive: "https:"))
        #expect("User-Agent: x".hasPrefix(asciiCaseInsensitive: "user-agent:"))
        #expect(!"http://h".hasPrefix(asciiCaseInsensitive: "https:"))
        #expect(!"file".hasPrefix(asciiCaseInsensitive: "file:"))
        // Only A–Z fold: "[" is not "{" and "É" is not "é".
        #expect(!"[".hasPrefix(asciiCaseInsensitive: "{"))
        #expect(!"Éx".hasPrefix(asciiCaseInsensitive: "éx"))
    }
}
