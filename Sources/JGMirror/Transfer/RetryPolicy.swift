/// What a connection does after one of its requests failed (docs/engine.md#retries), decided
/// without curl, clocks or workers: the failure and the connection's standing go
/// in, a decision comes out. `RequestCycle` carries it out.
///
/// Retries count failures without progress, not requests: a response that brought
/// new bytes restores the connection's budget before the failure is weighed, so a
/// long transfer through a flaky link ends, and one that never progresses ends too.
/// A request cut for staying under `min_rate` for `timeout` (`timeout`) leaves its
/// source at once for the next one the connection has not tried, and its bytes count
/// as progress only when they beat that floor over the request (`beatFloor`): a
/// server sending a byte a second would otherwise restore the budget on every cut and
/// be asked again for ever, while a long download that stalled once keeps its budget.
/// A source that could not be connected to (`connect`) is left at once the same way:
/// asking it again costs a backoff while a mirror is there.
enum RetryPolicy {
    /// A connection's retry budget and where it fetches from.
    struct Standing: Equatable {
        /// Index into the item's sources.
        var source: Int
        /// Sources this connection has used, the current one included.
        var sourcesTried: Int
        /// Failures without progress it may still have.
        var retriesLeft: Int
        /// Retries used in a row, the backoff's exponent.
        var consecutiveFailures: Int
    }

    /// What the item knows when a request fails.
    struct Situation: Equatable {
        var error: TransferError
        /// The failed response brought at least one new byte.
        var progressed: Bool
        /// Steals took the rest of the connection's region while the request failed.
        var regionTaken: Bool
        var standing: Standing
        /// The budget a connection starts with (`retries`).
        var retries: Int
        /// How many sources the item has (the primary URL and its mirrors).
        var sourceCount: Int
        /// Sources that answered with a permanent error.
        var deadSources: Set<Int>
        /// The failed request brought at least `min_rate` × `timeout` bytes: if it
        /// stalled, it did so after moving at a rate that counts.
        var beatFloor = true
    }

    /// The verdict on one failed request.
    enum Decision: Equatable {
        /// A failure of this machine, or bytes that cannot be trusted: the item fails.
        case failItem
        /// Nothing of the region is lost: the connection goes on (to new work, if any).
        case carryOn(Standing)
        /// One retry is spent: ask the same source again after the backoff for
        /// `standing.consecutiveFailures`.
        case retry(Standing)
        /// Ask the next live source, with a fresh budget; `sourceDead` when the one
        /// it leaves answered with a permanent error.
        case switchSource(Standing, sourceDead: Bool)
        /// The connection gives its region back and ends.
        case retire(sourceDead: Bool)
    }

    /// Decides what the connection in `situation` does next.
    static func decide(_ situation: Situation) -> Decision {
        let error = situation.error
        if error.code.isLocal || error.code == .sizeMismatch { return .failItem }
        var standing = situation.standing
        let stalled = error.code == .timeout
        if situation.progressed, !stalled || situation.beatFloor {
            standing.retriesLeft = situation.retries
            standing.consecutiveFailures = 0
        }
        if situation.regionTaken { return .carryOn(standing) }
        let leaveAtOnce = stalled || error.code == .connect
        if error.retryable, standing.retriesLeft > 0, !(leaveAtOnce && nextSource(situation, dead: situation.deadSources) != nil)
        {
            standing.retriesLeft -= 1
            standing.consecutiveFailures += 1
            return .retry(standing)
        }
        // This source is spent for this connection; the next one it has not tried.
        let sourceDead = !error.retryable
        var dead = situation.deadSources
        if sourceDead { dead.insert(standing.source) }
        if let next = nextSource(situation, dead: dead) {
            return .switchSource(
                Standing(
                    source: next, sourcesTried: standing.sourcesTried + 1, retriesLeft: situation.retries, consecutiveFailures: 0),
                sourceDead: sourceDead)
        }
        return .retire(sourceDead: sourceDead)
    }

    /// The next source after the connection's that is not `dead`, while it has sources
    /// it has not tried.
    private static func nextSource(_ situation: Situation, dead: Set<Int>) -> Int? {
        let count = situation.sourceCount
        let standing = situation.standing
        guard standing.sourcesTried < count else { return nil }
        return (1..<count).lazy.map { (standing.source + $0) % count }.first { !dead.contains($0) }
    }
}
