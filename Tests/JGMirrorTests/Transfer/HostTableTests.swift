import Foundation
import PropertyBased
import Testing

@testable import JGMirror

/// The host states (docs/hosts.md#host-states) in virtual time: every `now` is a number the test
/// picks.
@Suite struct HostTableTests {
    private let origin = "http://mirror.example:80"

    @Test func aHostThatAnswersStaysUpAndCountsItsRequests() {
        var table = HostTable()
        do {
            let got1 = table.ask(origin, now: 0)
            #expect(got1 == .go)
        }
        table.failed(origin, now: 1, probe: false)
        #expect(table.state(of: origin, now: 1) == .up)  // one failure is not a pattern
        do {
            let got1 = table.answered(origin, roundTrip: 0.2)
            #expect(got1 == false)
        }
        table.received(origin, bytes: 100)
        do {
            let got1 = table.ask(origin, now: 2)
            #expect(got1 == .go)
        }
        let host = table.hosts[origin]
        #expect(host?.requests == 2 && host?.failures == 1 && host?.bytes == 100 && host?.roundTrip == 0.2)
        #expect(host?.consecutiveFailures == 0)
    }

    @Test func failuresInARowMakeAHostSuspectWithOneProbeAtATimeAndTheRestHeld() {
        var table = HostTable()
        table.failed(origin, now: 10, probe: false)
        table.failed(origin, now: 10.1, probe: false)
        #expect(table.state(of: origin, now: 10.1) == .suspect)
        do {
            let got1 = table.ask(origin, now: 10.2)
            #expect(got1 == .probe)
        }
        // While the probe is out, everyone else waits, at the latest until the grace ends.
        do {
            let got1 = table.ask(origin, now: 10.3)
            #expect(got1 == .hold(until: 40))
        }
        do {
            let got1 = table.ask(origin, now: 10.3)
            #expect(got1 == .hold(until: 40))
        }
        // The probe fails: the next one waits 0.5 s, then 1 s, 2 s… up to 8 s.
        table.failed(origin, now: 11, probe: true)
        do {
            let got1 = table.ask(origin, now: 11.2)
            #expect(got1 == .hold(until: 11.5))
        }
        do {
            let got1 = table.ask(origin, now: 11.5)
            #expect(got1 == .probe)
        }
        table.failed(origin, now: 12, probe: true)
        do {
            let got1 = table.ask(origin, now: 12.5)
            #expect(got1 == .hold(until: 13))
        }
        #expect(table.hosts[origin]?.requests == 2)  // held requests were not sent
    }

    @Test func aHostWithNoAnswerForTheGraceIsDownAndFailsEveryRequestAtOnce() {
        var table = HostTable(settings: .init(grace: 30))
        table.failed(origin, now: 100, probe: false)
        table.failed(origin, now: 100, probe: false)
        var now = 100.0
        var probes = 0
        while case let permission = table.ask(origin, now: now), permission != .refuse(.down) {
            switch permission {
            case .probe:
                probes += 1
                table.failed(origin, now: now + 0.01, probe: true)
            case .hold(let until):
                #expect(until > now)
                now = until
            case .go, .refuse:
                Issue.record("unexpected \(permission)")
                return
            }
        }
        #expect(now == 130)  // the grace counts from the first failure
        #expect(probes <= 8)
        #expect(table.state(of: origin, now: now) == .down)
        do {
            let got1 = table.ask(origin, now: 500)
            #expect(got1 == .refuse(.down))
        }
    }

    @Test func oneAnswerBringsASuspectOrDownHostBack() {
        var table = HostTable(settings: .init(grace: 5))
        table.failed(origin, now: 0, probe: false)
        table.failed(origin, now: 0, probe: false)
        do {
            let got1 = table.ask(origin, now: 0)
            #expect(got1 == .probe)
        }
        do {
            let got1 = table.answered(origin, roundTrip: nil)
            #expect(got1)
        }
        do {
            let got1 = table.ask(origin, now: 1)
            #expect(table.state(of: origin, now: 1) == .up && got1 == .go)
        }
        table.failed(origin, now: 2, probe: false)
        table.failed(origin, now: 2, probe: false)
        do {
            let got1 = table.ask(origin, now: 8)
            #expect(got1 == .refuse(.down))
        }
        // A request already under way answers after all (a slow restart).
        do {
            let got1 = table.answered(origin, roundTrip: 3)
            #expect(got1)
        }
        do {
            let got1 = table.ask(origin, now: 9)
            #expect(got1 == .go)
        }
    }

    @Test func aProbeReleasedWithoutAVerdictLetsTheNextOneGo() {
        var table = HostTable()
        table.failed(origin, now: 0, probe: false)
        table.failed(origin, now: 0, probe: false)
        do {
            let got1 = table.ask(origin, now: 0)
            #expect(got1 == .probe)
        }
        table.released(origin)
        do {
            let got1 = table.ask(origin, now: 0)
            #expect(got1 == .probe)
        }
    }

    @Test func aRetryAfterCoolsTheWholeHostUntilItsTime() {
        var table = HostTable()
        table.throttled(origin, now: 50, wait: 20)
        #expect(table.state(of: origin, now: 50) == .cooling)
        do {
            let got1 = table.ask(origin, now: 50)
            #expect(got1 == .hold(until: 70))
        }
        do {
            let got1 = table.ask(origin, now: 69.9)
            #expect(got1 == .hold(until: 70))
        }
        do {
            let got1 = table.ask(origin, now: 70)
            #expect(got1 == .go)
        }
        #expect(table.state(of: origin, now: 70) == .up)
        // A shorter wait inside a longer one does not shorten it or count twice.
        table.throttled(origin, now: 80, wait: 30)
        table.throttled(origin, now: 90, wait: 5)
        do {
            let got1 = table.ask(origin, now: 96)
            #expect(got1 == .hold(until: 110))
        }
        #expect(table.hosts[origin]?.throttles == 3)
        // What the run waited, up to now: 20 s, then 16 of the 30 s under way.
        #expect(table.coolingTime(of: origin, now: 96) == 36)
        #expect(table.coolingTime(of: origin, now: 500) == 50)
        // A 429 without a time counts, and holds nothing.
        table.throttled(origin, now: 200, wait: nil)
        do {
            let got1 = table.ask(origin, now: 200)
            #expect(got1 == .go && table.hosts[origin]?.throttles == 4)
        }
    }

    @Test func aWaitPastMaxWaitOrTheDeadlineFailsAtOnceInsteadOfSleeping() {
        var table = HostTable(settings: .init(maxWait: 300))
        table.throttled(origin, now: 0, wait: 301)
        do {
            let got1 = table.ask(origin, now: 0)
            #expect(got1 == .refuse(.rateLimited(until: 301)))
        }
        // Once the remaining wait is within `max_wait`, requests wait for it.
        do {
            let got1 = table.ask(origin, now: 2)
            #expect(got1 == .hold(until: 301))
        }

        var bounded = HostTable(settings: .init(maxWait: 300, deadline: 60))
        bounded.throttled(origin, now: 0, wait: 50)
        do {
            let got1 = bounded.ask(origin, now: 0)
            #expect(got1 == .hold(until: 50))
        }
        bounded.throttled(origin, now: 20, wait: 50)
        do {
            let got1 = bounded.ask(origin, now: 20)
            #expect(got1 == .refuse(.rateLimited(until: 70)))
        }
    }

    @Test func originsAreKeptApart() {
        var table = HostTable()
        let other = "https://other.example:443"
        table.throttled(origin, now: 0, wait: 10)
        table.failed(other, now: 0, probe: false)
        do {
            let got1 = table.ask(other, now: 1)
            #expect(got1 == .go)
        }
        do {
            let got1 = table.ask(origin, now: 1)
            #expect(got1 == .hold(until: 10))
        }
        do {
            let got1 = table.ask("http://third.example:80", now: 1)
            #expect(got1 == .go)
        }
    }

    // MARK: Hints

    @Test func retryAfterIsReadInSecondsOrAsAnHTTPDateAndRateLimitResetAsAFallback() {
        let wall = Double(HTTPDate.parse("Wed, 21 Oct 2026 07:28:00 GMT") ?? 0)
        #expect(wall == 1_792_567_680)
        #expect(ThrottleHint.wait(retryAfter: "120", rateLimitReset: nil, wallClock: wall) == 120)
        #expect(ThrottleHint.wait(retryAfter: " Wed, 21 Oct 2026 07:28:30 GMT ", rateLimitReset: nil, wallClock: wall) == 30)
        #expect(ThrottleHint.wait(retryAfter: "Wed, 21 Oct 2026 07:27:00 GMT", rateLimitReset: nil, wallClock: wall) == 0)
        #expect(ThrottleHint.wait(retryAfter: nil, rateLimitReset: "7", wallClock: wall) == 7)
        #expect(ThrottleHint.wait(retryAfter: "soon", rateLimitReset: "7", wallClock: wall) == 7)
        #expect(ThrottleHint.wait(retryAfter: "-5", rateLimitReset: nil, wallClock: wall) == nil)
        #expect(ThrottleHint.wait(retryAfter: "1.5", rateLimitReset: nil, wallClock: wall) == nil)
        #expect(ThrottleHint.wait(retryAfter: nil, rateLimitReset: nil, wallClock: wall) == nil)
        // Longer than ten digits: past any max_wait, never no wait at all.
        #expect(ThrottleHint.wait(retryAfter: "99999999999999999999999", rateLimitReset: nil, wallClock: wall) == 1e10)
        #expect(ThrottleHint.wait(retryAfter: nil, rateLimitReset: "123456789012345", wallClock: wall) == 1e10)
    }

    /// A day its month does not have is no date (`timegm` would roll it over into the
    /// next month), in an HTTP date as in a Release's: a `Retry-After` that names one is
    /// not read. A leap second is the next minute's first.
    @Test func aDayItsMonthDoesNotHaveIsNoHTTPDate() {
        #expect(HTTPDate.parse("Sat, 31 Feb 2026 10:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Thu, 31 Apr 2026 10:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Wed, 31 Dec 2025 23:59:60 GMT") == HTTPDate.parse("Thu, 01 Jan 2026 00:00:00 GMT"))
        let wall = Double(HTTPDate.parse("Sat, 28 Feb 2026 10:00:00 GMT") ?? 0)
        #expect(ThrottleHint.wait(retryAfter: "Sat, 31 Feb 2026 10:00:00 GMT", rateLimitReset: "7", wallClock: wall) == 7)
    }

    @Test func httpDatesRoundTripAndMalformedOnesAreRefused() {
        for seconds: Int64 in [0, 784_111_777, 1_792_567_680, 4_102_444_799] {
            #expect(HTTPDate.parse(HTTPDate.format(seconds: seconds)) == seconds)
        }
        for bad in [
            "", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
        ] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
    }

    // MARK: Properties

    /// Whatever the order of observations: no request goes while the host cools, at
    /// most one probe is out while it is suspect, a host is down only after `grace`
    /// with no answer since its first failure, and nothing goes to a down host until
    /// an answer comes.
    @Test func randomObservationsKeepTheRules() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...150)) { raws in
            let grace = 5.0
            var table = HostTable(settings: .init(grace: grace, maxWait: 60))
            var now = 0.0
            var probesOut = 0
            var firstFailureSinceAnswer: Double?
            var coolUntil = 0.0
            for raw in raws {
                now += Double(raw % 1000) / 500  // up to 2 s later
                switch (raw / 1000) % 5 {
                case 0, 1:
                    let permission = table.ask(origin, now: now)
                    switch permission {
                    case .go:
                        #expect(now >= coolUntil)
                        #expect(table.state(of: origin, now: now) == .up)
                    case .probe:
                        #expect(now >= coolUntil)
                        #expect(probesOut == 0)
                        probesOut += 1
                    case .hold(let until):
                        #expect(until > now)
                    case .refuse(.down):
                        let since = firstFailureSinceAnswer ?? .infinity
                        #expect(now - since >= grace)
                    case .refuse(.rateLimited(let until)):
                        #expect(until == coolUntil && until - now > 60)
                    }
                case 2:
                    let probe = probesOut > 0 && raw % 2 == 0
                    if probe { probesOut -= 1 }
                    table.failed(origin, now: now, probe: probe)
                    if firstFailureSinceAnswer == nil { firstFailureSinceAnswer = now }
                case 3:
                    // Probes still out are ordinary requests once the host answers.
                    probesOut = 0
                    table.answered(origin, roundTrip: 0.1)
                    firstFailureSinceAnswer = nil
                    #expect(table.state(of: origin, now: now) != .down && table.state(of: origin, now: now) != .suspect)
                default:
                    let wait = Double(raw % 90)
                    table.throttled(origin, now: now, wait: wait)
                    coolUntil = max(coolUntil, now + wait)
                }
            }
        }
    }

    @Test func anOriginOfHostsJudgesByItsOwnGraceAndMaxWait() {
        var options = HostOptions()
        options.hostGrace = 5
        options.maxWait = 10
        let other = "https://other.example:443"
        var table = HostTable(settings: .init(grace: 30, maxWait: 300, origins: [origin: options]))
        for host in [origin, other] {
            table.failed(host, now: 0, probe: false)
            table.failed(host, now: 0, probe: false)
        }
        // The suspect host's other requests wait, at most until its own grace ends.
        #expect(table.ask(origin, now: 0) == .probe && table.ask(origin, now: 1) == .hold(until: 5))
        #expect(table.ask(other, now: 0) == .probe && table.ask(other, now: 1) == .hold(until: 30))
        #expect(table.ask(origin, now: 5) == .refuse(.down))
        #expect(table.state(of: other, now: 5) == .suspect)
        // A Retry-After of 20 s is past the origin's max_wait (10 s), within the run's.
        table.throttled("http://busy:80", now: 0, wait: 20)
        var busy = HostOptions()
        busy.maxWait = 10
        var strict = HostTable(settings: .init(origins: ["http://busy:80": busy]))
        strict.throttled("http://busy:80", now: 0, wait: 20)
        #expect(strict.ask("http://busy:80", now: 0) == .refuse(.rateLimited(until: 20)))
        #expect(table.ask("http://busy:80", now: 0) == .hold(until: 20))
    }

    @Test func aHostsRateIsSmoothedOverRequestsLongEnoughToShowIt() {
        var table = HostTable()
        // A small file in a millisecond shows latency, not rate.
        table.received(origin, bytes: 16_384, over: 0.001)
        table.received(origin, bytes: 500, over: nil)
        #expect(table.hosts[origin]?.rate == nil && table.hosts[origin]?.bytes == 16_884)
        table.received(origin, bytes: 1_000_000, over: 1)
        #expect(table.hosts[origin]?.rate == 1_000_000)
        // One slow request moves it a quarter of the way.
        table.received(origin, bytes: 200_000, over: 1)
        #expect(table.hosts[origin]?.rate == 800_000)
    }
}
