import Testing

@testable import JGMirror

/// `RequestBuilder.Shape.next` chooses what a connection asks for, and
/// `TransferRequest.sizeToCutAhead` whether every region asks before any answer,
/// without curl.
@Suite struct RequestShapeTests {
    private func next(
        from: Int64 = 0, length: Int64? = nil, regionEnd: Int64? = nil, ranges: Bool = false, ifRange: String? = nil,
        connections: Int = 4, file: Bool = false, conditions: [String] = ["If-None-Match: \"a\""]
    ) -> RequestBuilder.Shape {
        .next(
            url: "http://h/f", from: from, length: length, regionEnd: regionEnd, rangesSupported: ranges, ifRange: ifRange,
            connections: connections, isFileSource: file, conditions: conditions, firstBound: 2 << 20)
    }

    @Test func aFirstRequestAsksForItsFirstBytesOnlyWhenMoreConnectionsMayFollow() {
        // `bytes=0-2097151`: the length is learned, and a server never sends more before
        // the regions are cut (docs/engine.md#politeness).
        let first = next()
        #expect(first.ranged && first.from == 0 && first.end == 2 << 20 && first.ifRange == nil)
        #expect(first.conditions == ["If-None-Match: \"a\""])
        #expect(!next(connections: 1).ranged)
        #expect(!next(file: true).ranged)
        // Continuing a body of unknown length past byte 0 needs a range, and no conditions.
        let later = next(from: 500, connections: 1)
        #expect(later.ranged && later.conditions.isEmpty)
    }

    @Test func onceTheLengthIsKnownAConnectionAsksForTheRestOfItsRegion() {
        let region = next(from: 1000, length: 4000, regionEnd: 2000, ranges: true, ifRange: "\"e\"")
        #expect(region.ranged && region.from == 1000 && region.end == 2000 && region.ifRange == "\"e\"")
        #expect(region.conditions.isEmpty)
        // Owning no region, it asks to the end of the file.
        #expect(next(from: 3000, length: 4000, ranges: true).end == 4000)
        // The whole file from a server without ranges: no Range header at all.
        let whole = next(length: 4000, regionEnd: 4000, ranges: false)
        #expect(!whole.ranged && whole.end == 4000)
        // The first region of a file with ranges still says so (a steal may cut it).
        #expect(next(length: 4000, regionEnd: 4000, ranges: true).ranged)
        // A region that stops short of the end is a range even without range support known.
        #expect(next(length: 4000, regionEnd: 1000, ranges: false).ranged)
    }

    @Test func regionsAreCutFromTheManifestsSizeOnlyForAnUnconditionalRequestWorthTwoRegions() throws {
        func request(
            size: Int64? = 4096, connections: Int = 4, sources: [String] = ["http://h/f"], conditions: [String] = []
        ) throws -> TransferRequest {
            TransferRequest(
                id: 0, sources: sources, root: try RootDirectory(path: "/"), partPath: "/f.jgpart", statePath: "/f.jgd",
                expectedSize: size, connections: connections, retries: 2, minSegment: 1024, timeout: 5, headers: [],
                insecure: false, resume: true, conditions: conditions)
        }
        let anyHost: (String) -> Bool = { _ in true }
        #expect(try request().sizeToCutAhead(mayCutAhead: anyHost) == 4096)
        #expect(try request(size: 2048).sizeToCutAhead(mayCutAhead: anyHost) == 2048)
        #expect(try request(size: 2047).sizeToCutAhead(mayCutAhead: anyHost) == nil)
        #expect(try request(size: nil).sizeToCutAhead(mayCutAhead: anyHost) == nil)
        #expect(try request(connections: 1).sizeToCutAhead(mayCutAhead: anyHost) == nil)
        #expect(try request(conditions: ["If-None-Match: \"a\""]).sizeToCutAhead(mayCutAhead: anyHost) == nil)
        #expect(try request(sources: ["FILE:///srv/f"]).sizeToCutAhead(mayCutAhead: anyHost) == nil)
        // Every source's host must allow it: a mirror's host that answered with the whole file does not.
        let mirrors = try request(sources: ["http://h/f", "http://m/f"])
        #expect(mirrors.sizeToCutAhead(mayCutAhead: { !$0.hasPrefix("http://m/") }) == nil)
        #expect(mirrors.sizeToCutAhead(mayCutAhead: anyHost) == 4096)
    }
}
