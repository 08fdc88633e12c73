import Testing

@testable import JGMirror

/// `RetryPolicy` decides what a connection does after a failed request, without a server.
@Suite struct RetryPolicyTests {
    private let dropped = TransferError.retryable(.connection, "connection dropped")
    private let gone = TransferError.http(404, url: "http://h/f")

    private func situation(
        _ error: TransferError, progressed: Bool = false, regionTaken: Bool = false, source: Int = 0, tried: Int = 1,
        left: Int = 2, inARow: Int = 0, retries: Int = 2, sources: Int = 1, dead: Set<Int> = []
    ) -> RetryPolicy.Situation {
        RetryPolicy.Situation(
            error: error, progressed: progressed, regionTaken: regionTaken,
            standing: .init(source: source, sourcesTried: tried, retriesLeft: left, consecutiveFailures: inARow),
            retries: retries, sourceCount: sources, deadSources: dead)
    }

    @Test func localFailuresAndSizeMismatchesFailTheItemWhateverTheBudget() {
        let local = TransferError(code: .diskFull, message: "no space")
        #expect(RetryPolicy.decide(situation(local, progressed: true, sources: 3)) == .failItem)
        #expect(RetryPolicy.decide(situation(.sizeMismatch("longer"), regionTaken: true)) == .failItem)
        // A retryable remote failure is not the item's end while budget remains.
        #expect(RetryPolicy.decide(situation(dropped)) != .failItem)
    }

    @Test func aRetryableFailureSpendsOneRetryAndCountsTheBackoffExponent() {
        let decision = RetryPolicy.decide(situation(dropped, left: 2, inARow: 1))
        #expect(decision == .retry(.init(source: 0, sourcesTried: 1, retriesLeft: 1, consecutiveFailures: 2)))
        #expect(
            RetryPolicy.decide(situation(.http(503, url: "http://h/f"), left: 1))
                == .retry(.init(source: 0, sourcesTried: 1, retriesLeft: 0, consecutiveFailures: 1)))
    }

    @Test func aResponseThatBroughtBytesRestoresTheBudgetBeforeSpendingIt() {
        // Out of retries, but the failed response made progress: the budget is full again.
        let decision = RetryPolicy.decide(situation(dropped, progressed: true, left: 0, inARow: 3, retries: 5))
        #expect(decision == .retry(.init(source: 0, sourcesTried: 1, retriesLeft: 4, consecutiveFailures: 1)))
        // Without progress the same standing has nothing left to spend.
        #expect(RetryPolicy.decide(situation(dropped, left: 0, inARow: 3, retries: 5)) == .retire(sourceDead: false))
    }

    @Test func aRegionStolenMeanwhileLosesNothingAndSpendsNoRetry() {
        let decision = RetryPolicy.decide(situation(dropped, regionTaken: true, left: 1, inARow: 1))
        #expect(decision == .carryOn(.init(source: 0, sourcesTried: 1, retriesLeft: 1, consecutiveFailures: 1)))
        // A permanent error on such a request does not mark the source dead either.
        #expect(
            RetryPolicy.decide(situation(gone, progressed: true, regionTaken: true, left: 0, retries: 3))
                == .carryOn(.init(source: 0, sourcesTried: 1, retriesLeft: 3, consecutiveFailures: 0)))
    }

    @Test func aSpentSourceMovesToTheNextLiveMirrorWithAFreshBudget() {
        // Retries spent on source 1 of 3: next is 2.
        let spent = RetryPolicy.decide(situation(dropped, source: 1, left: 0, inARow: 2, retries: 2, sources: 3))
        #expect(
            spent == .switchSource(.init(source: 2, sourcesTried: 2, retriesLeft: 2, consecutiveFailures: 0), sourceDead: false))
        // A 404 kills source 0 at once (retries left or not) and skips the dead source 1.
        let notFound = RetryPolicy.decide(situation(gone, source: 0, left: 2, sources: 3, dead: [1]))
        #expect(
            notFound == .switchSource(.init(source: 2, sourcesTried: 2, retriesLeft: 2, consecutiveFailures: 0), sourceDead: true)
        )
        // The search wraps around past the last source.
        let wrapped = RetryPolicy.decide(situation(gone, source: 2, tried: 2, sources: 3, dead: [1]))
        #expect(
            wrapped == .switchSource(.init(source: 0, sourcesTried: 3, retriesLeft: 2, consecutiveFailures: 0), sourceDead: true))
    }

    @Test func aConnectionThatTriedEverySourceOrFindsNoneAliveRetires() {
        #expect(RetryPolicy.decide(situation(gone)) == .retire(sourceDead: true))
        #expect(RetryPolicy.decide(situation(gone, source: 0, tried: 3, sources: 3)) == .retire(sourceDead: true))
        #expect(
            RetryPolicy.decide(situation(dropped, source: 0, left: 0, sources: 3, dead: [1, 2])) == .retire(sourceDead: false))
    }

    /// A request cut for staying under `min_rate` for `timeout` (issue 31: a server
    /// sending a byte a second was asked again for ever, each cut restoring the budget).
    @Test func aStallUnderTheFloorIsNoProgressAndAStallOrRefusalLeavesItsSourceAtOnce() {
        let stall = TransferError.retryable(.timeout, "stalled: Operation too slow")
        // A few bytes under the floor: no budget restored, so the connection ends.
        var situation = situation(stall, progressed: true, left: 0, inARow: 1, retries: 2)
        situation.beatFloor = false
        #expect(RetryPolicy.decide(situation) == .retire(sourceDead: false))
        // A download that moved at a rate that counts and then stalled keeps its budget.
        situation.beatFloor = true
        #expect(
            RetryPolicy.decide(situation) == .retry(.init(source: 0, sourcesTried: 1, retriesLeft: 1, consecutiveFailures: 1)))
        // With a mirror it has not tried, the stalled connection moves there at once,
        // retries left or not, instead of asking the slow source again.
        var mirrored = self.situation(stall, progressed: true, left: 2, sources: 2)
        mirrored.beatFloor = false
        #expect(
            RetryPolicy.decide(mirrored)
                == .switchSource(.init(source: 1, sourcesTried: 2, retriesLeft: 2, consecutiveFailures: 0), sourceDead: false))
        // So does one whose source could not be connected to (issue 31: 48 MiB whose
        // primary refused took 1.12 × its mirror's time, a backoff on the primary first).
        #expect(
            RetryPolicy.decide(self.situation(.retryable(.connect, "Connection refused"), left: 2, sources: 2))
                == .switchSource(.init(source: 1, sourcesTried: 2, retriesLeft: 2, consecutiveFailures: 0), sourceDead: false))
        // Any other failure with retries left still asks the same source again.
        #expect(
            RetryPolicy.decide(self.situation(dropped, left: 2, sources: 2))
                == .retry(.init(source: 0, sourcesTried: 1, retriesLeft: 1, consecutiveFailures: 1)))
    }

    /// Every failure without progress spends budget or a source, so any connection ends
    /// after at most `(retries + 1) × sources` failed requests.
    @Test func failuresWithoutProgressAlwaysEnd() {
        for retries in 0...3 {
            for sources in 1...3 {
                for permanent in [false, true] {
                    var standing = RetryPolicy.Standing(source: 0, sourcesTried: 1, retriesLeft: retries, consecutiveFailures: 0)
                    var dead = Set<Int>()
                    var requests = 1
                    loop: while true {
                        let error = permanent ? gone : dropped
                        let s = RetryPolicy.Situation(
                            error: error, progressed: false, regionTaken: false, standing: standing, retries: retries,
                            sourceCount: sources, deadSources: dead)
                        switch RetryPolicy.decide(s) {
                        case .retry(let next):
                            standing = next
                        case .switchSource(let next, let sourceDead):
                            if sourceDead { dead.insert(standing.source) }
                            standing = next
                        case .retire:
                            break loop
                        case .failItem, .carryOn:
                            Issue.record("a remote failure without progress must retry, switch or retire")
                            break loop
                        }
                        requests += 1
                        #expect(requests <= (retries + 1) * sources, "retries \(retries), sources \(sources)")
                        if requests > (retries + 1) * sources { break loop }
                    }
                    #expect(requests == (permanent ? 1 : retries + 1) * sources, "retries \(retries), sources \(sources)")
                }
            }
        }
    }
}
