import Foundation
import TestServer
import Testing

@testable import JGMirror

/// `PrefixHasher` hashes a part file's prefix as it is written, reading back what it
/// did not see, and `FileHasher` the ranges it reads back.
@Suite struct PrefixHasherTests {
    @Test func hashesWrittenBytesReadsBackTheRestAndStartsOver() async throws {
        try await withTestDirectory { directory async throws in
            let path = directory + "/f.jgpart"
            let bytes = TestServer.bytes(count: 300_000, seed: 7)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let hasher = PrefixHasher(path: path)
            // The first 100,000 bytes as written; a later stretch out of order is read back.
            bytes.withUnsafeBytes { all in
                hasher.written(UnsafeRawBufferPointer(rebasing: all[0..<100_000]), at: 0)
                hasher.written(UnsafeRawBufferPointer(rebasing: all[200_000...]), at: 200_000)
            }
            #expect(try await hasher.finish(length: 300_000).get() == sha(bytes))

            // After a restart nothing hashed before counts.
            let again = PrefixHasher(path: path)
            bytes.withUnsafeBytes { again.written(UnsafeRawBufferPointer(rebasing: $0[0..<50_000]), at: 0) }
            again.restarted()
            let shorter = Array(bytes[0..<120_000])
            try Data(shorter).write(to: URL(fileURLWithPath: path))
            again.prefixCompleted(upTo: 120_000)
            #expect(try await again.finish(length: 120_000).get() == sha(shorter))
            // Asking for more than the file holds is an error, not a digest.
            await #expect(throws: VerifyError.self) { try await PrefixHasher(path: path).finish(length: 130_000).get() }
        }
    }

    /// The first `heldLimit` bytes are kept and hashed when the file is finished; a
    /// prefix that grows past the limit, or needs a read-back, hashes them first.
    @Test func heldBytesAreHashedOnceInOrderWhateverComesNext() async throws {
        try await withTestDirectory { directory async throws in
            let path = directory + "/f.jgpart"
            let bytes = TestServer.bytes(count: 3 * PrefixHasher.heldLimit, seed: 9)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            func written(_ hasher: PrefixHasher, _ ranges: [Range<Int>]) {
                bytes.withUnsafeBytes { all in
                    for range in ranges {
                        hasher.written(UnsafeRawBufferPointer(rebasing: all[range]), at: Int64(range.lowerBound))
                    }
                }
            }
            let limit = PrefixHasher.heldLimit
            // A small file, in pieces: held whole.
            let small = PrefixHasher(path: path)
            written(small, [0..<1000, 1000..<5000])
            #expect(try await small.finish(length: 5000).get() == sha(Array(bytes[0..<5000])))
            // Past the limit: the held bytes first, then the rest as it comes.
            let growing = PrefixHasher(path: path)
            written(growing, [0..<limit / 2, limit / 2..<limit, limit..<2 * limit + 7])
            #expect(try await growing.finish(length: Int64(2 * limit + 7)).get() == sha(Array(bytes[0..<2 * limit + 7])))
            // Held bytes, then a stretch the writer did not see: read back after them.
            let gap = PrefixHasher(path: path)
            written(gap, [0..<100])
            gap.prefixCompleted(upTo: 3000)
            #expect(try await gap.finish(length: Int64(bytes.count)).get() == sha(bytes))
            // A restart drops what was held.
            let restarted = PrefixHasher(path: path)
            written(restarted, [0..<100])
            restarted.restarted()
            written(restarted, [0..<50])
            #expect(try await restarted.finish(length: 50).get() == sha(Array(bytes[0..<50])))
        }
    }

    /// A read-back goes a chunk at a time, each read while the one before is hashed:
    /// a range that starts and ends inside chunks, and a whole file of several, hash
    /// exactly their bytes.
    @Test func readBackAcrossChunksHashesExactlyTheRange() async throws {
        try await withTestDirectory { directory in
            let path = directory + "/f"
            let bytes = TestServer.bytes(count: 2 * FileHasher.chunk + 12_345, seed: 11)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let fd = open(path, O_RDONLY)
            try #require(fd >= 0)
            defer { close(fd) }
            let from = 1000
            let to = 2 * FileHasher.chunk + 5
            let hasher = try #require(SHA256())
            let reached = try FileHasher.hashRange(fd: fd, from: Int64(from), to: Int64(to), into: hasher, path: path)
            #expect(reached == Int64(to))
            #expect(hasher.finalizeHex() == sha(Array(bytes[from..<to])))
            #expect(try FileHasher.sha256(path: path) == sha(bytes))
            // Less than a chunk, and nothing.
            let small = try #require(SHA256())
            #expect(try FileHasher.hashRange(fd: fd, from: 5, to: 70_005, into: small, path: path) == 70_005)
            #expect(small.finalizeHex() == sha(Array(bytes[5..<70_005])))
            let none = try #require(SHA256())
            #expect(try FileHasher.hashRange(fd: fd, from: 9, to: 9, into: none, path: path) == 9)
            #expect(none.finalizeHex() == sha([]))
        }
    }
}
