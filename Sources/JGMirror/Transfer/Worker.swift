/// One connection slot of an item: the request in flight, where it writes, its
/// retry budget and source. The range it owns lives in the item's `SegmentBook`
/// under `slot`.
///
/// Confined to the engine thread.
final class Worker {
    enum State {
        /// Has work and waits for a free connection slot to its host.
        case ready
        /// Has work and waits out a retry delay (monotonic seconds).
        case backoff(until: Double)
        /// A request is in flight.
        case active
    }

    unowned let item: ItemTransfer
    /// 0 for the first connection of the item; others are forced to HTTP/1.1 so the
    /// segments of one item never share a multiplexed connection. Also the worker's
    /// owner id in the item's `SegmentBook`.
    let slot: Int
    var state: State = .ready
    /// Index into the item's sources.
    var sourceIndex = 0
    /// Sources this worker has used, to stop once it has tried each.
    var sourcesTried = 1
    /// Failures without progress this worker may still have (docs/engine.md#retries: a response
    /// that brought new bytes restores it).
    var retriesLeft: Int
    /// Retries used in a row, for the backoff exponent.
    var consecutiveFailures = 0

    /// Where the last response redirected to, and how many redirects led there; the
    /// next request goes there. Cleared when a request ends any other way.
    var redirectURL: String?
    var redirects = 0

    /// Next byte the current (or next) request writes.
    var pos: Int64 = 0
    /// Where the current request started, to tell a response that brought bytes from one that did not.
    var requestStart: Int64 = 0
    /// One past the last byte the current request can deliver (asked for, or as
    /// the server's `Content-Range` ends); nil until known for an open-ended request.
    var requestedEnd: Int64?
    /// One past the last byte a 206 says it brings (its `Content-Range`): bytes past
    /// `requestedEnd` up to here are cut, past here they are more than announced.
    var announcedEnd: Int64?

    // What a steal weighs (engine clock, seconds):
    /// When the current request left, and when its first and latest bytes arrived.
    var sentAt = 0.0
    var firstByteAt: Double?
    var lastByteAt = 0.0
    /// Bytes the current request delivered.
    var requestBytes: Int64 = 0
    /// Bytes per second the previous request delivered, until the current one shows its own.
    var previousRate: Double?

    // Per request, for the run's `HostTable`:
    /// The origin the request in flight went to; nil once its end was noted.
    var origin: String?
    /// The request is its host's one probe (`HostTable.Permission.probe`).
    var probe = false
    /// Its response head was noted as the host's answer.
    var answered = false
    /// The origin the worker waits for (a suspect or cooling host), to be woken
    /// when that host answers.
    var heldFor: String?

    /// The last request ran on a connection an earlier one had opened.
    var reusedConnection = false
    /// The next request opens a connection of its own: the last one met a protocol
    /// error on a reused connection, whose cause may be what an earlier response left
    /// on it (`RequestCycle.judgeEnd`).
    var freshConnection = false

    // Per request:
    var easy: CurlEasy?
    var host = ""
    var url = ""
    var sentRange = false
    var head = ResponseHead()
    var headProcessed = false
    /// The request was cut before its response ended: its region ended first (a
    /// steal, or an open-ended request reaching the next region), or the response
    /// ran past the range asked for (`announcedEnd`). Stopping is success.
    var truncated = false
    /// Why the request must count as failed, when decided inside a callback.
    var error: TransferError?
    /// Paused by the rate limiter.
    var ratePaused = false
    /// The response is a redirect to follow, to this URL.
    var redirectTarget: String?

    init(item: ItemTransfer, slot: Int, retries: Int) {
        self.item = item
        self.slot = slot
        retriesLeft = retries
    }

    /// The current request brought at least one new byte.
    var progressed: Bool { pos > requestStart }

    /// The connection as `CrewPolicy` weighs it.
    var connection: CrewPolicy.Connection {
        CrewPolicy.Connection(
            slot: slot, phase: phase, inFlight: easy != nil, source: sourceIndex, position: pos, sentAt: sentAt,
            firstByteAt: firstByteAt, lastByteAt: lastByteAt, requestBytes: requestBytes, previousRate: previousRate,
            truncated: truncated)
    }

    /// Its state as `CrewPolicy` weighs it.
    var phase: CrewPolicy.Connection.Phase {
        switch state {
        case .ready: .ready
        case .backoff(let until): .backoff(until: until)
        case .active: .active
        }
    }

    /// The rate the connection has shown (`CrewPolicy.Connection.shownRate`).
    var shownRate: Double? { connection.shownRate }

    /// Notes `count` bytes arriving at `now`.
    func received(_ count: Int64, now: Double) {
        if firstByteAt == nil { firstByteAt = now }
        lastByteAt = now
        requestBytes += count
    }

    func resetRequest() {
        previousRate = shownRate
        firstByteAt = nil
        requestBytes = 0
        easy = nil
        head = ResponseHead()
        headProcessed = false
        truncated = false
        error = nil
        ratePaused = false
        sentRange = false
        redirectTarget = nil
        announcedEnd = nil
        answered = false
        requestStart = pos
    }
}
