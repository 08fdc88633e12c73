import Foundation
import PropertyBased
import Testing

@testable import JGMirror

/// `bytes` through a shell pipeline (`xz -c`, `gzip -c`…): the compressors real
/// archives use, independent of the decoder under test.
func compressed(_ bytes: [UInt8], with command: String) async throws -> [UInt8] {
    try await withTestDirectory { dir in
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/in"))
        let run = try await runProgram("/bin/sh", ["-c", "(\(command)) < in > out"], in: dir)
        try #require(run.status == 0, "\(command): \(run.stderr)")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/out")))
    }
}

/// xz (liblzma) and gzip (zlib), streaming and bounded.
@Suite struct DecompressorTests {
    static let text = Array((1...2000).map { "Package: p\($0)\nVersion: 1.\($0)\n\n" }.joined().utf8)

    @Test(arguments: ["xz -c", "xz -0 -c", "gzip -c", "gzip -9 -c"])
    func bothFormatsGiveTheTextBack(command: String) async throws {
        let format: CompressionFormat = command.hasPrefix("xz") ? .xz : .gzip
        let packed = try await compressed(Self.text, with: command)
        #expect(try Decompressor.decompress(packed, format: format, limit: Self.text.count) == Self.text)
        // Fed a few bytes at a time, as a file read in chunks is.
        let decompressor = try Decompressor(format: format, limit: Self.text.count)
        for start in stride(from: 0, to: packed.count, by: 7) {
            try decompressor.push(contentsOf: Array(packed[start..<min(start + 7, packed.count)]))
        }
        #expect(try decompressor.finish() == Self.text)
    }

    @Test func concatenatedStreamsAndMembersAreOneFile() async throws {
        let half = Self.text.count / 2
        let (first, second) = (Array(Self.text[..<half]), Array(Self.text[half...]))
        let xz = try await compressed(first, with: "xz -c") + compressed(second, with: "xz -c")
        #expect(try Decompressor.decompress(xz, format: .xz, limit: Self.text.count) == Self.text)
        let gzip = try await compressed(first, with: "gzip -c") + compressed(second, with: "gzip -c")
        #expect(try Decompressor.decompress(gzip, format: .gzip, limit: Self.text.count) == Self.text)
    }

    @Test func aFileIsReadInChunks() async throws {
        try await withTestDirectory { dir in
            let packed = try await compressed(Self.text, with: "xz -c")
            try Data(packed).write(to: URL(fileURLWithPath: dir + "/Packages.xz"))
            #expect(try Decompressor.decompress(path: dir + "/Packages.xz", format: .xz, limit: 1 << 20) == Self.text)
            #expect(throws: DecompressionError.self) {
                try Decompressor.decompress(path: dir + "/missing.xz", format: .xz, limit: 1 << 20)
            }
        }
    }

    @Test func aBombIsRefusedAtTheLimit() async throws {
        // 16 MiB of zeroes pack into a few kilobytes.
        for (command, format) in [
            ("head -c 16777216 /dev/zero | xz -c", CompressionFormat.xz), ("head -c 16777216 /dev/zero | gzip -c", .gzip),
        ] {
            let bomb = try await compressed([], with: command)
            #expect(bomb.count < 1 << 17)
            #expect(throws: DecompressionError.tooLarge(limit: 1 << 20)) {
                try Decompressor.decompress(bomb, format: format, limit: 1 << 20)
            }
            #expect(try Decompressor.decompress(bomb, format: format, limit: 16 << 20).count == 16 << 20)
        }
        #expect(throws: DecompressionError.tooLarge(limit: 3)) {
            try Decompressor.decompress([1, 2, 3, 4], format: .plain, limit: 3)
        }
    }

    @Test func truncatedAndDamagedStreamsAreErrors() async throws {
        for (command, format) in [("xz -c", CompressionFormat.xz), ("gzip -c", .gzip)] {
            let packed = try await compressed(Self.text, with: command)
            #expect(throws: DecompressionError.truncated) {
                try Decompressor.decompress(Array(packed.dropLast(12)), format: format, limit: 1 << 20)
            }
            var damaged = packed
            damaged[damaged.count / 2] ^= 0xFF
            #expect(throws: DecompressionError.self) { try Decompressor.decompress(damaged, format: format, limit: 1 << 20) }
            #expect(throws: DecompressionError.self) {
                try Decompressor.decompress(Array("Package: plain text\n".utf8), format: format, limit: 1 << 20)
            }
            #expect(throws: DecompressionError.truncated) { try Decompressor.decompress([], format: format, limit: 1 << 20) }
        }
    }

    /// Any bytes, in either format, end in bytes within the limit or a thrown error.
    @Test func anyBytesDecompressWithinTheLimitOrThrow() async throws {
        let seeds = [try await compressed(Self.text, with: "xz -c"), try await compressed(Self.text, with: "gzip -c")]
        await propertyCheck(
            count: 300, input: Gen.int(in: 0...1), Gen.int(in: 0...Int(UInt16.max)).array(of: 0...24), Gen.int(in: 0...8192)
        ) { which, flips, limit in
            // A valid stream with bytes changed here and there reaches deep into the decoder.
            var bytes = seeds[which]
            for flip in flips { bytes[flip % bytes.count] = UInt8(truncatingIfNeeded: flip >> 3) }
            let format: CompressionFormat = which == 0 ? .xz : .gzip
            if let output = try? Decompressor.decompress(bytes, format: format, limit: limit) {
                #expect(output.count <= limit)
            }
        }
    }
}
