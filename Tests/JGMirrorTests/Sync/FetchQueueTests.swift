import TestServer
import Testing

@testable import JGMirror

/// The order queued items start in (docs/engine.md#order-of-items).
@Suite struct FetchQueueTests {
    @Test func unknownSizesFirstInOrderThenTheLargestFirst() {
        var queue = FetchQueue()
        let queued: [(index: Int, fresh: Bool, size: Int64?)] = [
            (0, false, 1_000), (1, true, nil), (2, false, 1 << 20), (3, true, 50_000), (4, false, nil),
            (5, true, 1_000), (6, true, 1 << 20), (7, false, 1 << 40),
        ]
        for item in queued { queue.append(item.index, knownFresh: item.fresh, size: item.size) }
        var started: [Int] = []
        while let next = queue.popFirst() {
            started.append(next.index)
            #expect(next.knownFresh == queued[next.index].fresh)
        }
        #expect(started == [1, 4, 7, 2, 6, 3, 0, 5])
        #expect(queue.isEmpty)
    }

    /// Items queued while others wait join by the same rule; sizes of 2 GiB and more
    /// tie, in the plan's order.
    @Test func laterItemsJoinByTheSameRule() {
        var queue = FetchQueue()
        queue.append(10, knownFresh: false, size: 10)
        queue.append(11, knownFresh: false, size: 30)
        #expect(queue.popFirst()?.index == 11)
        queue.append(12, knownFresh: false, size: 20)
        queue.append(13, knownFresh: false, size: nil)
        queue.append(15, knownFresh: false, size: 5 << 30)
        queue.append(14, knownFresh: false, size: 3 << 30)
        let order = [queue.popFirst(), queue.popFirst(), queue.popFirst(), queue.popFirst(), queue.popFirst()].map {
            $0?.index
        }
        #expect(order == [13, 14, 15, 12, 10])
        #expect(queue.popFirst() == nil)
    }
}

/// The order through the built binary: one item in flight, 40 items with their sizes in
/// the manifest, the large one last; it is asked for as soon as the first items
/// handed to the engine ahead of the queue leave room, not after every small one.
@Suite struct LargestFirstTests {
    @Test func aLargeFileLastInTheManifestStartsBeforeTheSmallOnesQueuedAhead() async throws {
        let server = try TestServer()
        var lines = ["version: 1", "root: tree", "items:"]
        for index in 0..<40 {
            let body = TestServer.bytes(count: index == 39 ? 300_000 : 1_000 + index, seed: UInt64(index))
            var route = TestServer.Route(body: body)
            // The walk queues all 40 while the first is answered (it takes microseconds;
            // this answer waits a second), so the queue, not the walk, decides the order.
            if index == 0 { route.headDelay = 1 }
            server.set("/f\(index)", route)
            lines.append("  - {url: \(server.url("/f\(index)")), dest: f\(index).bin, size: \(body.count), sha256: \(sha(body))}")
        }
        try await withTestDirectory { dir in
            let path = write(lines.joined(separator: "\n") + "\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--jobs", "1", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            let order = server.gets().map(\.path)
            let large = try #require(order.firstIndex(of: "/f39"))
            // The engine takes up to 32 items ahead of the queue (`ItemRunner.window`).
            #expect(large <= 32, "\(order)")
        }
    }
}
