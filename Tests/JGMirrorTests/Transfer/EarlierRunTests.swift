import Foundation
import Testing

@testable import JGMirror

/// `EarlierRun` adopts valid resume state or removes what cannot be trusted, and
/// returns what it adopted.
@Suite struct EarlierRunTests {
    private let url = "http://127.0.0.1:1/f"

    private func request(_ dir: String, resume: Bool = true) throws -> TransferRequest {
        TransferRequest(
            id: 0, sources: [url], root: try RootDirectory(path: dir), partPath: dir + "/f.jgpart", statePath: dir + "/f.jgd",
            expectedSize: nil, connections: 4, retries: 2, minSegment: 1024, timeout: 5, headers: [], insecure: false,
            resume: resume)
    }

    private func takeOver(_ request: TransferRequest) -> EarlierRun {
        EarlierRun.takeOver(request) { SegmentBook(length: $0, missing: $1, connections: 4, minSegment: 1024) }
    }

    /// A 4096-byte part file whose state says bytes [1024, 4096) are missing.
    private func leaveEarlierRun(in dir: String, stateURL: String? = nil) throws {
        #expect(FileManager.default.createFile(atPath: dir + "/f.jgpart", contents: Data(count: 4096)))
        let state = ResumeState(
            url: stateURL ?? url, validators: Validators(etag: "\"a\""), length: 4096,
            missing: [ByteRange(lower: 1024, upper: 4096)])
        try state.write(to: dir + "/f.jgd", durable: false, root: try RootDirectory(path: dir))
    }

    private func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test func validStateIsAdoptedWithItsBookAndValidators() async throws {
        try await withTestDirectory { dir in
            try leaveEarlierRun(in: dir)
            let earlier = takeOver(try request(dir))
            let book = try #require(earlier.book)
            #expect(book.length == 4096 && book.missing == [ByteRange(lower: 1024, upper: 4096)])
            #expect(earlier.resumedFrom == 1024)
            #expect(earlier.validators == Validators(etag: "\"a\""))
            #expect(earlier.note == nil)
            #expect(exists(dir + "/f.jgpart") && exists(dir + "/f.jgd"))
        }
    }

    @Test func stateOfAnotherURLIsDiscardedWithANoteAndBothFilesGo() async throws {
        try await withTestDirectory { dir in
            try leaveEarlierRun(in: dir, stateURL: "http://127.0.0.1:1/other")
            let earlier = takeOver(try request(dir))
            #expect(earlier.book == nil && earlier.resumedFrom == 0)
            #expect(earlier.note?.contains("another URL") == true)
            #expect(!exists(dir + "/f.jgpart") && !exists(dir + "/f.jgd"))
        }
    }

    /// A part file with another name (a copy of the tree made with `cp -al`, a
    /// snapshot tool) is not continued: writing on would change the other file. It
    /// is unlinked, so the other name keeps its bytes, and a part file linked since
    /// is refused when opened to continue.
    @Test func aPartFileWithOtherHardLinksIsNotContinued() async throws {
        try await withTestDirectory { dir in
            try leaveEarlierRun(in: dir)
            #expect(link(dir + "/f.jgpart", dir + "/snapshot.bin") == 0)
            let earlier = takeOver(try request(dir))
            #expect(earlier.book == nil && earlier.resumedFrom == 0)
            #expect(earlier.note?.contains("has other hard links") == true, "\(String(describing: earlier.note))")
            #expect(!exists(dir + "/f.jgpart") && !exists(dir + "/f.jgd"))
            #expect(FileManager.default.contents(atPath: dir + "/snapshot.bin") == Data(count: 4096))

            #expect(FileManager.default.createFile(atPath: dir + "/f.jgpart", contents: Data(count: 10)))
            #expect(link(dir + "/f.jgpart", dir + "/other.bin") == 0)
            let root = try RootDirectory(path: dir)
            #expect(throws: TransferError.self) { try PartFile(path: dir + "/f.jgpart", fresh: false, root: root) }
            // A fresh part file replaces the name and leaves the other file alone.
            let fresh = try PartFile(path: dir + "/f.jgpart", fresh: true, root: root)
            try [UInt8(1)].withUnsafeBytes { try fresh.write($0, at: 0) }
            #expect(FileManager.default.contents(atPath: dir + "/other.bin") == Data(count: 10))
        }
    }

    /// A `.jgd` may be published with the tree: it keeps no credential or query value
    /// of its URL, only the whole URL's SHA-256, which must match; a record written
    /// before that existed is matched by its URL as then kept.
    @Test func resumeStateKeepsNoSecretOfItsURL() async throws {
        try await withTestDirectory { dir in
            let secret = "http://user:PASS@127.0.0.1:1/f?token=SECRET&part=1"
            try leaveEarlierRun(in: dir, stateURL: secret)
            let text = try String(contentsOfFile: dir + "/f.jgd", encoding: .utf8)
            #expect(!text.contains("PASS") && !text.contains("SECRET") && text.contains("url_sha256"), "\(text)")
            var request = try request(dir)
            request.sources = [secret]
            #expect(takeOver(request).resumedFrom == 1024)
            // Another token is another URL.
            try leaveEarlierRun(in: dir, stateURL: secret)
            request.sources = [secret.replacingOccurrences(of: "SECRET", with: "OTHER")]
            #expect(takeOver(request).note?.contains("another URL") == true)
            // A record from before: no digest, the URL without its credentials only.
            try leaveEarlierRun(in: dir, stateURL: secret)
            var old = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/f.jgd"))) as? [String: Any])
            old["url_sha256"] = nil
            old["url"] = "http://***@127.0.0.1:1/f?token=SECRET&part=1"
            try JSONSerialization.data(withJSONObject: old).write(to: URL(fileURLWithPath: dir + "/f.jgd"))
            request.sources = [secret]
            #expect(takeOver(request).resumedFrom == 1024)
        }
    }

    @Test func withResumeOffOrWithoutStateNothingIsTrusted() async throws {
        try await withTestDirectory { dir in
            try leaveEarlierRun(in: dir)
            let off = takeOver(try request(dir, resume: false))
            #expect(off.book == nil && off.note == nil)
            #expect(!exists(dir + "/f.jgpart") && !exists(dir + "/f.jgd"))

            // A part file without state holds nothing we can vouch for.
            #expect(FileManager.default.createFile(atPath: dir + "/f.jgpart", contents: Data(count: 10)))
            let bare = takeOver(try request(dir))
            #expect(bare.book == nil && bare.note == nil)
            #expect(!exists(dir + "/f.jgpart"))
        }
    }
}
