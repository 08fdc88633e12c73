import JGMirror

/// Drives the engine's `SegmentBook` with simulated connections in virtual time.
///
/// A discrete-event simulation: between two events every streaming connection
/// delivers at its constant rate, so the next event is the earliest of a first byte
/// arriving, a connection reaching the end of its region (which a steal may have
/// moved), a stall, and a stall's timeout. Nothing depends on the wall clock, so the
/// same scenario and policy always give the same result.
///
/// The engine it models (docs/engine.md#connections-and-ranges): connection 0 sends the first GET
/// for the whole file on a new connection; its head arrives after two round trips (handshake and
/// request) with the length, and only then does the client split the file and open
/// the other connections. Each region is one request; a connection whose request
/// runs past its region's end (the open-ended first request, or a region a steal
/// shortened) closes at the end and opens a new connection for its next request,
/// which costs two round trips instead of one. The contiguous prefix is hashed as it
/// grows, at most `hashBytesPerSecond`; the download is done when the last byte is
/// written and hashed.
public struct LinkSimulation {
    /// The download being simulated.
    public let scenario: LinkScenario
    /// How the file is shared out.
    public let policy: SchedulingPolicy
    /// When the connections after the first open.
    public let opening: Opening

    private var book: SimulatedSegmentBook
    private var connections: [SimulatedConnection]
    private var now = 0.0
    private var hashed = 0.0
    private var requests = 0
    private var opened = 0
    private var events = 0
    private var written: [Range<Int64>] = []
    private var bytesWritten: Int64 = 0
    private var stalled = false
    /// The engine's policy, for `SchedulingPolicy.finishTogether`.
    private let crewPolicy = CrewPolicy()

    /// The longest a simulation may run, in events: far more than any scenario needs,
    /// so reaching it means the scheduler stopped making progress.
    static let eventLimit = 10_000_000

    public init(_ scenario: LinkScenario, policy: SchedulingPolicy, opening: Opening = .afterFirstHead) {
        precondition(scenario.size > 0 && scenario.connections >= 1 && scenario.bytesPerSecond > 0)
        self.scenario = scenario
        self.policy = policy
        self.opening = opening
        book = SimulatedSegmentBook(
            length: scenario.size, connections: scenario.connections, minSegment: scenario.minSegment,
            regionCap: policy.regionCap(for: scenario))
        connections = (0..<scenario.connections).map { SimulatedConnection(rate: scenario.rate(of: $0)) }
    }

    /// Simulates `scenario` under `policy`.
    public static func run(
        _ scenario: LinkScenario, policy: SchedulingPolicy,
        opening: Opening = .afterFirstHead
    ) -> SimulationResult {
        var simulation = LinkSimulation(scenario, policy: policy, opening: opening)
        return simulation.run()
    }

    /// Runs the download to its end.
    public mutating func run() -> SimulationResult {
        let roundTrip = scenario.roundTrip
        if opening == .knownSize {
            // Every connection asks for its region at once.
            for index in connections.indices { startRequest(index) }
        } else {
            // The first request: whole file, open-ended, on a new connection; the
            // others open when its head arrives, or (preconnected) open alongside it.
            requests = 1
            opened = 1
            connections[0].open = true
            now = 2 * roundTrip
            if let range = acquire(0) {
                connections[0].position = Double(range.lowerBound)
                connections[0].requestStart = Double(range.lowerBound)
                connections[0].requestEnd = scenario.size
                connections[0].firstByteAt = now
                connections[0].phase = .streaming
            }
            if opening == .preconnected {
                for index in connections.indices.dropFirst() {
                    connections[index].open = true
                    opened += 1
                }
            }
            for index in connections.indices.dropFirst() { startRequest(index) }
        }

        while !book.isComplete {
            events += 1
            precondition(events < Self.eventLimit, "no progress: \(scenario), \(policy)")
            var next = Double.infinity
            var finishing: [Int: Double] = [:]
            for (index, connection) in connections.enumerated() {
                switch connection.phase {
                case .idle: break
                case .requested(let firstByte): next = min(next, firstByte)
                case .streaming:
                    guard let end = book.end(of: index) else { continue }
                    let finish = now + (Double(end) - connection.position) / connection.rate
                    finishing[index] = finish
                    next = min(next, finish)
                    if let stall = scenario.stall, stall.connection == index, !stalled, stall.at > now {
                        next = min(next, stall.at)
                    }
                case .stalled(let since): next = min(next, since + (scenario.stall?.timeout ?? 0))
                }
            }
            precondition(next.isFinite, "every connection idle with bytes missing: \(scenario), \(policy)")
            advance(to: next, finishing: finishing)
            handleEvents()
        }
        let lastByte = now
        let seconds = lastByte + (Double(scenario.size) - hashed) / scenario.hashBytesPerSecond
        return SimulationResult(
            seconds: seconds, lastByte: lastByte, physicalLimit: scenario.physicalLimit, requests: requests,
            connectionsOpened: opened, bytesWritten: bytesWritten, overrun: book.overrun,
            written: Self.merged(written), events: events)
    }

    /// Work for `index` under the policy: taken from the pool, or (if the policy
    /// steals) from another connection's region.
    private mutating func acquire(_ index: Int) -> Range<Int64>? {
        switch policy.steal {
        case .never: book.take(for: index)
        case .half: book.takeOrStealHalf(for: index)
        case .finishTogether: book.take(for: index) ?? stealFinishingTogether(index)
        }
    }

    /// Takes work for `thief` as the engine deals it (`CrewPolicy.work`), weighing
    /// what the engine would measure of each connection at `now`; a stalled victim the
    /// steal left with nothing is dropped, its connection closed.
    private mutating func stealFinishingTogether(_ thief: Int) -> Range<Int64>? {
        let snapshot = CrewPolicy.Snapshot(
            connections: connections.indices.compactMap { measured($0, thief: thief) }, roundTrip: scenario.roundTrip,
            now: now, limit: scenario.connections, nextSlot: scenario.connections)
        guard let (range, dropping) = book.work(for: thief, policy: crewPolicy, in: snapshot) else { return nil }
        if let victim = dropping {
            book.giveBack(victim)
            connections[victim].phase = .idle
            connections[victim].open = false
        }
        return range
    }

    /// Connection `index` as the engine measures it at `now`; `thief` is the one
    /// asking, whose request has ended. Nil for an idle one (the engine retired it).
    private func measured(_ index: Int, thief: Int) -> CrewPolicy.Connection? {
        let connection = connections[index]
        let lastByteAt: Double
        switch connection.phase {
        case .idle:
            guard index == thief else { return nil }
            lastByteAt = now
        case .requested: lastByteAt = 0
        case .streaming: lastByteAt = now
        case .stalled(let since): lastByteAt = since
        }
        return CrewPolicy.Connection(
            slot: index, phase: .active, inFlight: index != thief, position: Int64(connection.position),
            sentAt: connection.sentAt, firstByteAt: connection.firstByteAt, lastByteAt: lastByteAt,
            requestBytes: Int64(connection.position - connection.requestStart), previousRate: connection.previousRate,
            truncated: !connection.open)
    }

    /// Sends `index`'s next request, on its open connection (one round trip to the
    /// first byte) or a new one (two); it goes idle when there is nothing to take.
    private mutating func startRequest(_ index: Int) {
        guard let range = acquire(index) else {
            connections[index].phase = .idle
            return
        }
        requests += 1
        var cost = scenario.roundTrip
        if !connections[index].open {
            opened += 1
            connections[index].open = true
            cost += scenario.roundTrip
        }
        connections[index].previousRate = measured(index, thief: index)?.shownRate
        connections[index].sentAt = now
        connections[index].firstByteAt = nil
        connections[index].position = Double(range.lowerBound)
        connections[index].requestStart = Double(range.lowerBound)
        connections[index].requestEnd = range.upperBound
        connections[index].phase = .requested(firstByte: now + cost)
    }

    /// Moves every streaming connection forward to `time`, writes what arrived into
    /// the book, and hashes the prefix.
    private mutating func advance(to time: Double, finishing: [Int: Double]) {
        let elapsed = time - now
        for index in connections.indices where connections[index].phase == .streaming {
            guard let end = book.end(of: index), let from = book.next(of: index) else { continue }
            var position = min(Double(end), connections[index].position + connections[index].rate * elapsed)
            if let finish = finishing[index], finish <= time { position = Double(end) }
            connections[index].position = position
            let upTo = Int64(position)
            if upTo > from {
                let accepted = book.record(index, at: from, count: upTo - from)
                bytesWritten += accepted
                written.append(from..<(from + accepted))
            }
        }
        hashed = min(Double(book.contiguousPrefix), hashed + scenario.hashBytesPerSecond * elapsed)
        now = time
    }

    /// Whatever happens at `now`: first bytes, finished regions, a stall and its timeout.
    private mutating func handleEvents() {
        var gaveBack = false
        for index in connections.indices {
            switch connections[index].phase {
            case .idle: break
            case .requested(let firstByte):
                if firstByte <= now {
                    connections[index].phase = .streaming
                    connections[index].firstByteAt = firstByte
                }
            case .streaming:
                if let stall = scenario.stall, stall.connection == index, !stalled, stall.at <= now {
                    stalled = true
                    connections[index].phase = .stalled(since: now)
                    continue
                }
                guard let end = book.end(of: index), let next = book.next(of: index), next >= end else { continue }
                // A request that runs past the region's end is cut by closing its connection.
                if connections[index].requestEnd > end { connections[index].open = false }
                startRequest(index)
            case .stalled(let since):
                guard now >= since + (scenario.stall?.timeout ?? 0) else { continue }
                book.giveBack(index)
                connections[index].open = false
                gaveBack = true
                startRequest(index)
            }
        }
        // A region given back is taken again by whoever is idle.
        if gaveBack {
            for index in connections.indices where connections[index].phase == .idle { startRequest(index) }
        }
    }

    /// Sorts and merges touching ranges; overlapping ones stay apart so they show.
    static func merged(_ ranges: [Range<Int64>]) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = result.last, last.upperBound == range.lowerBound {
                result[result.count - 1] = last.lowerBound..<range.upperBound
            } else {
                result.append(range)
            }
        }
        return result
    }
}
