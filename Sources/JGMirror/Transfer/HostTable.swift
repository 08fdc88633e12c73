/// The hosts of one run (docs/hosts.md#host-states), decided without curl, threads or a real clock:
/// what was observed of each origin (a response head, a connection that failed, a
/// `Retry-After`) plus `now` go in; whether a request may go, must wait, or its item
/// must fail comes out. The engine carries the answers out and keeps one table for
/// every item, list and signature of the run.
///
/// An origin is `scheme://host:port` as `Origin.of` spells it. A host is
/// `up` until `suspectAfter` requests in a row fail to get an answer (connection
/// refused, reset, first-byte timeout); then it is `suspect`: one request at a time
/// probes it, with a growing delay between probes, and its other requests wait
/// instead of each spending its own retries. With no answer for `grace` since the
/// first of those failures it is `down`, and every request for it fails at once. Any
/// answer brings it back `up`. A `Retry-After` (or `RateLimit-Reset`) cools it: no
/// request goes before that time, and a wait past `maxWait` or the run's deadline
/// fails the requests at once rather than sleeping.
struct HostTable: Sendable {
    /// What the table's decisions depend on besides observations.
    struct Settings: Sendable, Equatable {
        /// Seconds without an answer, from the first failure, after which a host is
        /// `down` (`host_grace`): longer than a web server takes to restart.
        var grace = Rules.hostGrace.defaultValue
        /// The longest cooling requests wait for (`max_wait`); a host asking for more
        /// fails its requests at once.
        var maxWait = Rules.maxWait.defaultValue
        /// The run's deadline, monotonic seconds (`--max-duration`): a cooling that ends
        /// after it fails its requests at once too.
        var deadline: Double?
        /// Requests in a row without an answer that make a host suspect. Two: one
        /// refused connection can be a full listen queue; two with no answer between
        /// them are a host that is not there.
        var suspectAfter = 2
        /// Delay before the second probe of a suspect host; it doubles per failed probe
        /// up to `probeMaxDelay`. Over a 30 s grace that is about seven probes: a host
        /// back within the grace is found within a few seconds, and a dead one costs a
        /// handful of connection attempts, not one per item.
        var probeBaseDelay = 0.5
        var probeMaxDelay = 8.0
        /// Options given for one origin (`hosts:` in the manifest), by origin as
        /// `Origin.key` spells it; what one leaves unset is the run's.
        var origins: [String: HostOptions] = [:]

        /// `grace` for `origin`.
        func grace(for origin: String) -> Double { origins[origin]?.hostGrace ?? grace }

        /// `maxWait` for `origin`.
        func maxWait(for origin: String) -> Double { origins[origin]?.maxWait ?? maxWait }
    }

    /// A host's standing, as the report spells it.
    enum State: String, Sendable, Equatable {
        case up, cooling, suspect, down
    }

    /// Why a request must fail at once.
    enum Refusal: Sendable, Equatable {
        /// No answer for `grace` (`host_down`).
        case down
        /// The host asks to be left alone until `until`, past `maxWait` or the
        /// deadline (`rate_limited`).
        case rateLimited(until: Double)
    }

    /// The answer to "may a request go to this origin now?".
    enum Permission: Sendable, Equatable {
        /// Send it.
        case go
        /// Send it as the one probe of a suspect host; report how it ended
        /// (`answered`, `failed` or `released` with `probe: true`).
        case probe
        /// Wait, and ask again at `until` (or sooner, when the host answers).
        case hold(until: Double)
        /// Fail the request's item (or move it to another source).
        case refuse(Refusal)
    }

    /// What the table knows of one origin.
    struct Host: Sendable, Equatable {
        /// `up`, `suspect` or `down`; cooling is a time on top (`coolUntil`).
        var health: State = .up
        /// Requests in a row that got no answer.
        var consecutiveFailures = 0
        /// When the first of them failed: `grace` counts from here.
        var failingSince: Double?
        /// A probe is under way.
        var probing = false
        /// Probes that failed in a row, the probe delay's exponent.
        var failedProbes = 0
        /// No probe before this.
        var nextProbe = 0.0
        /// No request before this (`Retry-After`).
        var coolUntil = 0.0

        // What the report shows:
        var requests = 0
        /// Body bytes kept, and delivered (kept or not).
        var bytes: Int64 = 0
        var bytesReceived: Int64 = 0
        /// Requests that got no answer.
        var failures = 0
        /// 429 and 503 answers.
        var throttles = 0
        /// Seconds the host was left alone in coolings that are over, overlaps counted
        /// once (`coolingTime(of:now:)` adds the one under way).
        var cooledTime = 0.0
        /// When the latest cooling began.
        var coolingSince: Double?
        /// Seconds from sending a request to its response head, smoothed.
        var roundTrip: Double?
        /// Bytes per second one connection to it delivers, smoothed over requests:
        /// what an item's new connection weighs its sources by (`SourceShare`).
        var rate: Double?
    }

    /// A request's bytes over less than this many seconds tell its latency more than
    /// the host's rate, and are not weighed (a small file arrives in a millisecond).
    static let shortestRateSample = 0.05

    let settings: Settings
    /// By origin.
    private(set) var hosts: [String: Host] = [:]

    init(settings: Settings = Settings()) { self.settings = settings }

    /// The host's standing at `now`.
    func state(of origin: String, now: Double) -> State {
        guard let host = hosts[origin] else { return .up }
        if host.health == .down { return .down }
        return host.coolUntil > now ? .cooling : host.health
    }

    // MARK: Decisions

    /// Whether a request may go to `origin` at `now`; a request that goes is counted.
    mutating func ask(_ origin: String, now: Double) -> Permission {
        var host = hosts[origin] ?? Host()
        defer { hosts[origin] = host }
        if host.health == .suspect, let since = host.failingSince, now - since >= settings.grace(for: origin) {
            host.health = .down
        }
        if host.health == .down { return .refuse(.down) }
        if host.coolUntil > now {
            let tooLong =
                host.coolUntil - now > settings.maxWait(for: origin) || settings.deadline.map { host.coolUntil > $0 } == true
            return tooLong ? .refuse(.rateLimited(until: host.coolUntil)) : .hold(until: host.coolUntil)
        }
        guard host.health == .suspect else {
            host.requests += 1
            return .go
        }
        // Suspect: one probe at a time, none before its delay; the rest wait, at the
        // latest until the grace runs out and the host is found down.
        let downAt = (host.failingSince ?? now) + settings.grace(for: origin)
        if host.probing { return .hold(until: downAt) }
        if now < host.nextProbe { return .hold(until: min(host.nextProbe, downAt)) }
        host.probing = true
        host.requests += 1
        return .probe
    }

    // MARK: Observations

    /// A response head arrived from `origin` (any status: the host is there);
    /// `roundTrip` is the seconds since its request left. Returns whether the host was
    /// suspect or down, so requests waiting for it should ask again now.
    @discardableResult
    mutating func answered(_ origin: String, roundTrip: Double?) -> Bool {
        var host = hosts[origin] ?? Host()
        defer { hosts[origin] = host }
        let wasHeld = host.health != .up
        host.health = .up
        host.consecutiveFailures = 0
        host.failingSince = nil
        host.failedProbes = 0
        host.nextProbe = 0
        // A probe still out is an ordinary request now: the host is up.
        host.probing = false
        if let roundTrip, roundTrip >= 0 {
            // Smoothed as TCP smooths its RTT (RFC 6298: 7/8 old, 1/8 new).
            host.roundTrip = host.roundTrip.map { $0 * 0.875 + roundTrip * 0.125 } ?? roundTrip
        }
        return wasHeld
    }

    /// A request to `origin` got no answer: the connection was refused or reset before
    /// a response head, or no first byte came within the timeout.
    mutating func failed(_ origin: String, now: Double, probe: Bool) {
        var host = hosts[origin] ?? Host()
        defer { hosts[origin] = host }
        host.failures += 1
        host.consecutiveFailures += 1
        if host.failingSince == nil { host.failingSince = now }
        if probe {
            host.probing = false
            host.nextProbe = now + min(settings.probeMaxDelay, settings.probeBaseDelay * Double(1 << min(host.failedProbes, 20)))
            host.failedProbes += 1
        }
        if host.health == .up, host.consecutiveFailures >= settings.suspectAfter {
            host.health = .suspect
            // The first probe goes at once: the failures so far were not probes.
            host.nextProbe = now
        }
    }

    /// A probe to `origin` ended without telling anything about the host (its item
    /// stopped, or it failed for a reason of its own): another may go.
    mutating func released(_ origin: String) {
        hosts[origin]?.probing = false
    }

    /// `origin` answered 429 or 503 asking to be left alone for `wait` seconds
    /// (`ThrottleHint`); nil `wait`: it gave no time, and only the answer counts.
    mutating func throttled(_ origin: String, now: Double, wait: Double?) {
        var host = hosts[origin] ?? Host()
        defer { hosts[origin] = host }
        host.throttles += 1
        guard let wait, wait > 0 else { return }
        let until = now + wait
        guard until > host.coolUntil else { return }
        if host.coolUntil <= now {
            // The previous cooling is over: it counts whole, and a new one begins.
            if let since = host.coolingSince { host.cooledTime += host.coolUntil - since }
            host.coolingSince = now
        }
        host.coolUntil = until
    }

    /// Seconds `origin` was left alone in this run up to `now`, overlaps counted once:
    /// what it was asked and the run waited, not what it asked (a wait of a century is
    /// refused at once, and counts the run's seconds since).
    func coolingTime(of origin: String, now: Double) -> Double {
        guard let host = hosts[origin] else { return 0 }
        return host.cooledTime + (host.coolingSince.map { max(0, min(host.coolUntil, now) - $0) } ?? 0)
    }

    /// `count` body bytes arrived from `origin` and were kept, of `delivered` (all when
    /// nil); `seconds` from the request's first byte to its end, when it had one. A
    /// request long enough to show a rate updates the host's, smoothed (3/4 old, 1/4
    /// new: a host that slows down shows it within a few requests, one odd request
    /// does not swing it).
    mutating func received(_ origin: String, bytes count: Int64, of delivered: Int64? = nil, over seconds: Double? = nil) {
        var host = hosts[origin] ?? Host()
        defer { hosts[origin] = host }
        host.bytes += count
        host.bytesReceived += max(count, delivered ?? count)
        guard let seconds, seconds >= Self.shortestRateSample else { return }
        let rate = Double(count) / seconds
        host.rate = host.rate.map { $0 * 0.75 + rate * 0.25 } ?? rate
    }
}
