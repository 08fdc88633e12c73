import Foundation
import Testing

@testable import JGMirror

/// How manifests and plans store their items compactly (issue 16): the public
/// properties read back exactly what was parsed or set.
@Suite struct CompactItemTests {
    static let testDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    @Test func packedChecksumsSpellTheSameHexAgain() {
        // Every nibble value in every position of each of the four words.
        let samples = [
            Self.testDigest, String(repeating: "0", count: 64), String(repeating: "f", count: 64),
            "0123456789abcdef" + "fedcba9876543210" + "00112233445566778899aabbccddeeff",
        ] + (0..<50).map { _ in (0..<64).map { _ in String("0123456789abcdef".randomElement()!) }.joined() }
        for hex in samples {
            let packed = PackedSHA256(hex)
            #expect(packed.isPacked)
            #expect(packed.text == hex)
            #expect(packed.matches(hex))
            #expect(packed == PackedSHA256(hex))
        }
        #expect(PackedSHA256(Self.testDigest) != PackedSHA256(String(repeating: "0", count: 64)))
        #expect(!PackedSHA256(Self.testDigest).matches(Self.testDigest.uppercased()))
    }

    @Test func otherTextIsKeptAsGiven() {
        for text in [Self.testDigest.uppercased(), "abc", "", Self.testDigest + "0", String(Self.testDigest.dropLast()) + "g"] {
            let packed = PackedSHA256(text)
            #expect(!packed.isPacked)
            #expect(packed.text == text)
            #expect(packed.matches(text))
        }
    }

    @Test func itemsReadBackTheirChecksums() throws {
        let manifest = try Manifest.parse(
            """
            version: 1
            items:
              - url: http://127.0.0.1:9/a
                sha256: \(Self.testDigest.uppercased())
              - url: http://127.0.0.1:9/b
                sha256: \(Self.testDigest)
              - url: http://127.0.0.1:9/c
            """, name: "m.yaml")
        #expect(manifest.items.map(\.sha256) == [Self.testDigest, Self.testDigest, nil])
        #expect(manifest.items[0].packedSHA256?.isPacked == true)
        var plan = Plan(manifest: manifest)
        #expect(plan.items.map(\.sha256) == [Self.testDigest, Self.testDigest, nil])
        #expect(plan.items.map(\.hasChecksum) == [true, true, false])
        plan.items[2].sha256 = "not hex"
        #expect(plan.items[2].sha256 == "not hex")
        plan.items[1].sha256 = nil
        #expect(plan.items[1].sha256 == nil)
        #expect(!plan.items[1].hasChecksum)
    }
}
