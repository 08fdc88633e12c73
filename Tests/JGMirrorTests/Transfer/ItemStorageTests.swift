import Foundation
import Testing

@testable import JGMirror

/// `ItemStorage` keeps an item's part file and resume state; `RemoteFile` what the
/// item learned of the remote file. Both without a server.
@Suite struct ItemStorageTests {
    private let url = "http://127.0.0.1:1/f"

    private func request(_ dir: String, resume: Bool = true, size: Int64? = nil, limit: Int64? = nil) throws -> TransferRequest {
        TransferRequest(
            id: 0, sources: [url, "http://127.0.0.1:2/f"], root: try RootDirectory(path: dir), partPath: dir + "/f.jgpart",
            statePath: dir + "/f.jgd", expectedSize: size, connections: 4, retries: 2, minSegment: 1024, timeout: 5,
            headers: [], insecure: false, resume: resume, sizeLimit: limit)
    }

    /// A storage whose fields belong to the calling thread, which plays the engine thread.
    private func storage(_ request: TransferRequest) -> ItemStorage {
        var configuration = TransferEngine.Configuration()
        configuration.durable = false
        let thread = EngineThread()
        thread.enter()
        return ItemStorage(request: request, configuration: configuration, thread: thread)
    }

    /// Gives `storage` its part file as the preparation queue would: a new one, or with
    /// `earlierRun` the one an earlier run left, with its resume state.
    private func open(_ storage: ItemStorage, _ request: TransferRequest, earlierRun: Bool = false) {
        storage.adopt(part: ItemPreparation.openPart(request, fresh: !earlierRun), earlierRun: earlierRun)
    }

    private func size(_ path: String) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
    }

    // `close` queues its disk work and returns the queue, which the tests wait for.

    private func book(_ length: Int64, missing: [ByteRange]) -> SegmentBook {
        SegmentBook(length: length, missing: missing, connections: 4, minSegment: 1024)
    }

    @Test func aResumableFileIsReservedAndItsStateKeptWhenItStops() async throws {
        try await withTestDirectory { dir in
            let request = try request(dir)
            let storage = storage(request)
            open(storage, request)
            #expect(storage.openFailure == nil && size(dir + "/f.jgpart") == 0)
            #expect(storage.learned(length: 8192, rangesSupported: true) == nil)
            #expect(storage.resumable && size(dir + "/f.jgpart") == 8192)
            storage.close(
                keepingState: true, book: book(8192, missing: [ByteRange(lower: 4096, upper: 8192)]),
                validators: Validators(etag: "\"a\""))?.sync {}
            #expect(storage.hasState && size(dir + "/f.jgpart") == 8192)
            guard
                case .valid(let state) = ResumeState.load(
                    path: dir + "/f.jgd", url: url, partSize: 8192, root: try RootDirectory(path: dir))
            else {
                Issue.record("the stopped item's resume state must load")
                return
            }
            #expect(state.missingRanges == [ByteRange(lower: 4096, upper: 8192)] && state.validators == Validators(etag: "\"a\""))
        }
    }

    @Test func whatCannotResumeLeavesNoTrace() async throws {
        try await withTestDirectory { dir in
            // No ranges, too small, or resume off: no state, and the part file goes.
            for (length, ranges, resume) in [(Int64(8192), false, true), (512, true, true), (8192, true, false)] {
                let request = try request(dir, resume: resume)
                let storage = storage(request)
                open(storage, request)
                #expect(storage.learned(length: length, rangesSupported: ranges) == nil)
                #expect(!storage.resumable, "\(length) \(ranges) \(resume)")
                storage.close(keepingState: true, book: book(length, missing: []), validators: Validators())?.sync {}
                #expect(
                    !FileManager.default.fileExists(atPath: dir + "/f.jgpart")
                        && !FileManager.default.fileExists(atPath: dir + "/f.jgd"))
            }
        }
    }

    @Test func startingOverEmptiesThePartFileAndDropsItsState() async throws {
        try await withTestDirectory { dir in
            let request = try request(dir)
            let storage = storage(request)
            open(storage, request)
            _ = storage.learned(length: 8192, rangesSupported: true)
            storage.close(
                keepingState: true, book: book(8192, missing: [ByteRange(lower: 0, upper: 8192)]), validators: Validators())?.sync
            {}
            #expect(FileManager.default.fileExists(atPath: dir + "/f.jgd"))
            let again = self.storage(request)
            open(again, request, earlierRun: true)
            #expect(again.openFailure == nil)
            try again.startOver()
            #expect(!again.resumable && !again.hasState && size(dir + "/f.jgpart") == 0)
            #expect(!FileManager.default.fileExists(atPath: dir + "/f.jgd"))
        }
    }

    @Test func anItemThatNeverStartedKeepsOnlyAnEarlierRunsBytes() async throws {
        try await withTestDirectory { dir in
            let request = try request(dir)
            let fresh = storage(request)
            open(fresh, request)
            fresh.abandon()
            #expect(!FileManager.default.fileExists(atPath: dir + "/f.jgpart"))
            #expect(FileManager.default.createFile(atPath: dir + "/f.jgpart", contents: Data(count: 100)))
            let adopted = storage(request)
            open(adopted, request, earlierRun: true)
            adopted.abandon()
            #expect(size(dir + "/f.jgpart") == 100)
        }
    }

    @Test func anAnnouncedLengthIsRefusedWhenTheManifestSaysOtherwise() async throws {
        try await withTestDirectory { dir in
            let sized = try request(dir, size: 100)
            let limited = try request(dir, limit: 100)
            #expect(sized.refusal(ofLength: 100) == nil && sized.refusal(ofLength: nil) == nil)
            #expect(sized.refusal(ofLength: 101)?.code == .sizeMismatch)
            #expect(limited.refusal(ofLength: 100) == nil && limited.refusal(ofLength: 101)?.code == .tooLarge)
        }
    }

    @Test func ifRangeGoesOnlyToTheSourceThatGaveTheValidators() {
        var remote = RemoteFile(sources: ["http://a/f", "http://b/f"])
        remote.revealed(by: Validators(etag: "\"v\""), from: 1)
        #expect(remote.ifRange(for: 1) == "\"v\"" && remote.ifRange(for: 0) == nil)
        #expect(!remote.presumed)
        remote.remember("http://b2/f", of: 1)
        remote.remember("http://b3/f", of: 1)  // the first place a source led stays
        #expect(remote.url(of: 1) == "http://b2/f" && remote.url(of: 0) == "http://a/f")
        remote.adopt(Validators())  // a 304 without validators changes nothing
        #expect(remote.validators == Validators(etag: "\"v\""))
        remote.presume()
        remote.forget()
        #expect(remote.url(of: 1) == "http://b/f" && remote.validators == Validators() && !remote.presumed)
    }
}
