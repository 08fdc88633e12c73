import Testing

@testable import JGMirror

/// Which source an item's new connection uses
/// (docs/hosts.md#sources-by-health), from host standings and measured rates given as numbers: no
/// clock, no network.
@Suite struct SourceShareTests {
    /// The sources `count` connections go to, one after another, as an item hires them.
    private func deal(_ candidates: [SourceShare.Candidate], count: Int) -> [Int?] {
        var connections: [Int: Int] = [:]
        return (0..<count).map { _ in
            let source = SourceShare.pick(candidates, connections: connections)
            if let source { connections[source, default: 0] += 1 }
            return source
        }
    }

    @Test func withNothingMeasuredConnectionsGoRoundTheSourcesPrimaryFirst() {
        let sources = [SourceShare.Candidate(source: 0, state: .up), .init(source: 1, state: .up)]
        #expect(deal(sources, count: 6) == [0, 1, 0, 1, 0, 1])
    }

    @Test func measuredRatesGiveEachSourceItsShare() {
        // The primary delivers a third of the mirror's rate: a quarter of the connections.
        let sources = [
            SourceShare.Candidate(source: 0, state: .up, rate: 1_000_000), .init(source: 1, state: .up, rate: 3_000_000),
        ]
        let dealt = deal(sources, count: 8)
        #expect(dealt.first == 1)  // a new item's first request goes to the faster host
        #expect(dealt.filter { $0 == 0 }.count == 2 && dealt.filter { $0 == 1 }.count == 6)
        // A primary at a byte per second gets nothing while the mirror is up.
        let crawling = [SourceShare.Candidate(source: 0, state: .up, rate: 1), .init(source: 1, state: .up, rate: 8e6)]
        #expect(deal(crawling, count: 16).allSatisfy { $0 == 1 })
    }

    @Test func hostsThatAreNotUpGetNoNewConnection() {
        for state in [HostTable.State.suspect, .cooling, .down] {
            let sources = [
                SourceShare.Candidate(source: 0, state: state, rate: 9e9), .init(source: 1, state: .up),
                .init(source: 2, state: .up, rate: 10),
            ]
            // However fast it was, until it answers again; the others share as usual.
            #expect(deal(sources, count: 4) == [1, 2, 1, 2], "\(state)")
        }
        // None up: no choice here; the host table holds or refuses the request.
        let dead = [SourceShare.Candidate(source: 0, state: .down), .init(source: 1, state: .cooling)]
        #expect(SourceShare.pick(dead, connections: [:]) == nil)
    }

    @Test func aSourceNotMeasuredYetIsWeighedAsTheBestAndGetsItsTurn() {
        let sources = [SourceShare.Candidate(source: 0, state: .up, rate: 2e6), .init(source: 1, state: .up)]
        #expect(deal(sources, count: 4) == [0, 1, 0, 1])
        // What the item already carries counts: its primary holds three connections.
        #expect(SourceShare.pick(sources, connections: [0: 3]) == 1)
        // A host measured at nothing is still used when it is the only one up.
        let alone = [SourceShare.Candidate(source: 0, state: .up, rate: 0), .init(source: 1, state: .down)]
        #expect(SourceShare.pick(alone, connections: [0: 5]) == 0)
    }
}
