import Testing

@testable import JGMirror

/// `ItemEvents` decides when an item tells the event stream it started and how far it is.
@Suite struct ItemEventsTests {
    @Test func theStartGoesOutOnceWithWhatWasKnownThen() {
        var events = ItemEvents(id: 7, interval: 0.5)
        guard
            case .started(let id, let length, let connections, let resumedFrom) = events.start(
                length: 100, connections: 4, resumedFrom: 10)
        else {
            Issue.record("no start event")
            return
        }
        #expect(id == 7 && length == 100 && connections == 4 && resumedFrom == 10)
        let again = events.start(length: 200, connections: 1, resumedFrom: 0)
        #expect(again == nil)
    }

    @Test func progressWaitsForTheStartThenComesOncePerInterval() {
        var events = ItemEvents(id: 3, interval: 0.5)
        events.begin(now: 10)
        let beforeStart = events.due(now: 20)
        _ = events.start(length: nil, connections: 1, resumedFrom: 0)
        let dues = [20, 20.4, 20.5].map { events.due(now: $0) }
        #expect(!beforeStart, "no progress before the start event")
        #expect(dues == [true, false, true])
        guard
            case .progress(let id, let bytesThisRun, let bytesPresent, let length, let connections) =
                events.report(bytesThisRun: 5, bytesPresent: 6, length: nil, connections: 2)
        else {
            Issue.record("no progress event")
            return
        }
        #expect(id == 3 && bytesThisRun == 5 && bytesPresent == 6 && length == nil && connections == 2)
    }

    @Test func theFirstProgressIsAnIntervalAfterTheItemBegan() {
        var events = ItemEvents(id: 0, interval: 1)
        events.begin(now: 100)
        _ = events.start(length: 1, connections: 1, resumedFrom: 0)
        let dues = [100.9, 101].map { events.due(now: $0) }
        #expect(dues == [false, true])
    }
}

/// `Crew`'s view of workers that wait, to retry or for a connection slot.
@Suite struct CrewWaitingTests {
    @Test func workersAreDoneWaitingWhenReadyOrTheirDelayRanOut() throws {
        try withCrew { crew, _ in
            let ready = crew.hire()
            let retrying = crew.hire()
            retrying.state = .backoff(until: 5)
            let active = crew.hire()
            active.state = .active
            #expect(crew.doneWaiting(now: 4).map(\.slot) == [ready.slot])
            #expect(crew.doneWaiting(now: 5).map(\.slot) == [ready.slot, retrying.slot])
            #expect(crew.activeCount == 1)
        }
    }

    @Test func theNextLookIsTheSoonestDelayOrASlotsLookWithin50ms() throws {
        try withCrew { crew, _ in
            #expect(crew.nextLook(now: 1, before: 2) == 2, "nobody waits: the caller's limit")
            let retrying = crew.hire()
            retrying.state = .backoff(until: 1.5)
            #expect(crew.nextLook(now: 1, before: 2) == 1.5)
            _ = crew.hire()  // waits for a connection slot: looked at again within 50 ms
            #expect(crew.nextLook(now: 1, before: 2) == 1.05)
        }
    }

    @Test func theCrewIsTakenAsItStoodWhenTheLookBegan() throws {
        try withCrew { crew, _ in
            let first = crew.hire()
            let second = crew.hire()
            var seen: [Int] = []
            for worker in crew.doneWaiting(now: 0) {
                seen.append(worker.slot)
                if worker === first {
                    crew.retire(second)
                    second.state = .active
                    _ = crew.hire()
                }
            }
            // The retired worker is still gone through; its wait is looked at when
            // reached (it no longer waits), and the new hire is not.
            #expect(seen == [first.slot])
        }
    }

    /// Runs `body` with a crew of an engine whose loop does not run: this thread
    /// plays the engine thread, which the crew and the engine's state belong to.
    private func withCrew(_ body: (Crew, TransferEngine) throws -> Void) throws {
        var configuration = TransferEngine.Configuration()
        configuration.startsLoop = false
        let engine = try TransferEngine(configuration: configuration) { _ in }
        engine.engineThread.enter()
        let request = TransferRequest(
            id: 0, sources: ["http://127.0.0.1:1/f"], root: try RootDirectory(path: "/"), partPath: "/nonexistent/f.jgpart",
            statePath: "/nonexistent/f.jgd", expectedSize: nil, connections: 4, retries: 2, minSegment: 1024, timeout: 5,
            headers: [], insecure: false, resume: false)
        let item = ItemTransfer(engine: engine, request: request) { _ in }
        try body(Crew(item: item, connections: 4, minSegment: 1024), engine)
    }
}
