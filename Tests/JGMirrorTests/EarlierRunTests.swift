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
