import Testing

@testable import LinkSimulator

/// The link simulator's invariants, and the ratios that chose the engine's policy
/// (bench/RESULTS.md). Virtual time only: nothing here depends on the machine's speed.
@Suite struct LinkSimulatorTests {
    static let mebibyte: Int64 = 1 << 20

    /// A spread of links, files and troubles, every policy and opening.
    static var scenarios: [LinkScenario] {
        var list: [LinkScenario] = []
        for (size, connections, rate, roundTrip) in [
            (mebibyte, 8, 1e6, 0.05), (48 * mebibyte, 8, 4e6, 0.2), (48 * mebibyte + 12345, 3, 10e6, 0.01),
            (256 * mebibyte, 16, 100e6, 0.0001), (5 * mebibyte + 1, 1, 1e6, 0.05), (64 * mebibyte, 4, 1e6, 0.2),
        ] as [(Int64, Int, Double, Double)] {
            let plain = LinkScenario(size: size, connections: connections, bytesPerSecond: rate, roundTrip: roundTrip)
            var slow = plain
            slow.slowConnection = connections - 1
            var stalling = plain
            stalling.stall = .init(connection: connections / 2, at: 4 * roundTrip + 0.1, timeout: 2)
            list += [plain, slow, stalling]
        }
        return list
    }

    @Test func theSameScenarioGivesTheSameResult() {
        for scenario in Self.scenarios {
            for policy in SchedulingPolicy.allCases {
                #expect(LinkSimulation.run(scenario, policy: policy) == LinkSimulation.run(scenario, policy: policy))
            }
        }
    }

    @Test func everyByteIsWrittenOnceAndNoClientBeatsTheLink() {
        for scenario in Self.scenarios {
            for policy in SchedulingPolicy.allCases {
                for opening in Opening.allCases {
                    let result = LinkSimulation.run(scenario, policy: policy, opening: opening)
                    let context = "\(scenario), \(policy), \(opening)"
                    #expect(result.written == [0..<scenario.size], "\(context)")
                    #expect(result.bytesWritten == scenario.size, "\(context)")
                    #expect(result.seconds >= scenario.physicalLimit * (1 - 1e-9), "\(context)")
                    #expect(result.lastByte <= result.seconds, "\(context)")
                    if opening != .preconnected { #expect(result.requests >= result.connectionsOpened, "\(context)") }
                }
            }
        }
    }

    @Test func oneConnectionWithTheSizeKnownReachesThePhysicalLimitExactly() {
        // One request, no splitting: size / rate + 2 RTT (the hasher keeps up).
        let scenario = LinkScenario(size: 48 * Self.mebibyte, connections: 1, bytesPerSecond: 4e6, roundTrip: 0.2)
        let result = LinkSimulation.run(scenario, policy: .regionPerConnection, opening: .knownSize)
        #expect(abs(result.seconds - scenario.physicalLimit) < 1e-6)
        #expect(result.requests == 1)
    }

    @Test func oneRequestPerConnectionBeatsAPiecePerRequestOnALongLink() {
        // The link: 48 mebibyte over 8 connections capped at 4 MB/s, 200 ms apart.
        let scenario = LinkScenario(size: 48 * Self.mebibyte, connections: 8, bytesPerSecond: 4e6, roundTrip: 0.2)
        let pieces = LinkSimulation.run(scenario, policy: .piecePerRequest)
        let regions = LinkSimulation.run(scenario, policy: .cappedRegions)
        #expect(regions.requests == 8)
        #expect(pieces.requests == 48)
        #expect(regions.seconds < 0.75 * pieces.seconds)
        // What is left is the wait for the first head before the other connections open.
        #expect(abs(regions.seconds - (scenario.physicalLimit + 2 * scenario.roundTrip)) < 1e-6)
        let preconnected = LinkSimulation.run(scenario, policy: .cappedRegions, opening: .preconnected)
        #expect(abs(preconnected.seconds - (scenario.physicalLimit + scenario.roundTrip)) < 1e-6)
    }

    @Test func stealingKeepsOneSlowConnectionFromHoldingTheItemBack() {
        // bench's 100 ms row: 8 connections at 4 MB/s, one at a tenth of that.
        var scenario = LinkScenario(size: 48 * Self.mebibyte, connections: 8, bytesPerSecond: 4e6, roundTrip: 0.1)
        scenario.slowConnection = 4
        let fixed = LinkSimulation.run(scenario, policy: .staticSplit)
        let halves = LinkSimulation.run(scenario, policy: .cappedRegions)
        let together = LinkSimulation.run(scenario, policy: .finishTogether)
        #expect(fixed.ratio > 7)
        #expect(halves.seconds < 0.4 * fixed.seconds)
        // Halving the slow connection's region leaves it half of it; cutting where it
        // finishes with the others leaves it what it can do meanwhile.
        #expect(halves.ratio > 2.5)
        #expect(together.ratio < 1.35)
    }

    @Test func stealingByFinishTimeHelpsManySlowRegionsToo() {
        // 16 connections of 1 MB/s, one at 100 kB/s: its capped region is under
        // 2 × min_segment, which halving never steals from.
        var scenario = LinkScenario(size: 48 * Self.mebibyte, connections: 16, bytesPerSecond: 1e6, roundTrip: 0.01)
        scenario.slowConnection = 1
        #expect(LinkSimulation.run(scenario, policy: .cappedRegions).ratio > 5)
        // One region per connection: when the others finish at 3.15 s, the slow one
        // still holds 2.7 mebibyte, which pieces of at least min_segment share out in two
        // of 1.35 mebibyte, 1.4 s each: 1.38, where capped regions stayed under 1.35, the price of
        // one request per connection.
        #expect(LinkSimulation.run(scenario, policy: .finishTogether).ratio < 1.4)
    }

    @Test func cappedRegionsKeepTheHashTailShortOnAFastLink() {
        // 4 GiB over 16 connections of 100 MB/s on a near link: with one region per
        // connection 15/16 of the file is hashed after the last byte.
        let scenario = LinkScenario(
            size: 4 << 30, connections: 16, bytesPerSecond: 100e6, roundTrip: 0.0001,
            hashBytesPerSecond: 1.4e9)
        let whole = LinkSimulation.run(scenario, policy: .regionPerConnection)
        let capped = LinkSimulation.run(scenario, policy: .cappedRegions)
        #expect(whole.hashTail > 2)
        #expect(capped.hashTail < 0.5)
        #expect(capped.ratio < 1.05)
        #expect(whole.ratio > 1.5)
    }

    @Test func aStalledConnectionsRegionIsTakenAgainAfterTheTimeout() {
        var scenario = LinkScenario(size: 48 * Self.mebibyte, connections: 4, bytesPerSecond: 4e6, roundTrip: 0.05)
        scenario.stall = .init(connection: 2, at: 1, timeout: 5)
        let stall = scenario.stall!
        let halves = LinkSimulation.run(scenario, policy: .cappedRegions)
        #expect(halves.written == [0..<scenario.size])
        // Halving steals most of its region meanwhile; the last half waits for the
        // timeout, after which the stalled connection reconnects and takes it again.
        #expect(halves.connectionsOpened >= 5)
        #expect(halves.seconds > stall.at + stall.timeout)
        #expect(halves.seconds < stall.at + stall.timeout + 1)
        // A stalled owner's rate is 0: a thief takes all of its region, no timeout needed.
        let together = LinkSimulation.run(scenario, policy: .finishTogether)
        #expect(together.written == [0..<scenario.size])
        #expect(together.seconds < stall.at + stall.timeout)
    }
}
