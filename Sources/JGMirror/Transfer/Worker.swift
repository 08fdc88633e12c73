/// One connection slot of an item: the request in flight, where it writes, its
/// retry budget and source. The range it owns lives in the item's `SegmentBook`
/// under `slot`.
///
/// The engine thread's only: its fields are one `EngineBound` value (`Fields`), read
/// and changed as `worker.pos` through dynamic member lookup, each access checked in
/// debug builds; in release builds the key path of each access folds into a direct
/// one (the write callback reads and changes a dozen of them per buffer).
@dynamicMemberLookup
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
    private var fields: EngineBound<Fields>

    /// What the worker knows and does, the engine thread's only.
    struct Fields {
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
        /// Body bytes libcurl handed over for the current request, written or not.
        var requestReceived: Int64 = 0
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
    }

    init(item: ItemTransfer, slot: Int, retries: Int) {
        self.item = item
        self.slot = slot
        fields = EngineBound(Fields(retriesLeft: retries), on: item.engine.engineThread)
    }

    /// One of the worker's fields (`worker.pos`), checked and changed in place as
    /// `EngineBound` members are; always inlined, so that the key path folds.
    subscript<Member>(dynamicMember path: WritableKeyPath<Fields, Member>) -> Member {
        @inline(__always) get { fields[dynamicMember: path] }
        @inline(__always) _modify { yield &fields[dynamicMember: path] }
    }

    /// The current request brought at least one new byte.
    var progressed: Bool { fields.pos > fields.requestStart }

    /// The connection as `CrewPolicy` weighs it.
    var connection: CrewPolicy.Connection {
        CrewPolicy.Connection(
            slot: slot, phase: phase, inFlight: fields.easy != nil, source: fields.sourceIndex, position: fields.pos,
            sentAt: fields.sentAt,
            firstByteAt: fields.firstByteAt, lastByteAt: fields.lastByteAt, requestBytes: fields.requestBytes,
            previousRate: fields.previousRate,
            truncated: fields.truncated)
    }

    /// Its state as `CrewPolicy` weighs it.
    var phase: CrewPolicy.Connection.Phase {
        switch fields.state {
        case .ready: .ready
        case .backoff(let until): .backoff(until: until)
        case .active: .active
        }
    }

    /// The rate the connection has shown (`CrewPolicy.Connection.shownRate`).
    var shownRate: Double? { connection.shownRate }

    /// Notes `count` bytes arriving at `now`.
    func received(_ count: Int64, now: Double) {
        if fields.firstByteAt == nil { fields.firstByteAt = now }
        fields.lastByteAt = now
        fields.requestBytes += count
    }

    /// Clears what belonged to the last request before the next is sent; its rate
    /// stays as `previousRate`.
    func resetRequest() {
        fields.previousRate = shownRate
        fields.firstByteAt = nil
        fields.requestBytes = 0
        fields.requestReceived = 0
        fields.easy = nil
        fields.head = ResponseHead()
        fields.headProcessed = false
        fields.truncated = false
        fields.error = nil
        fields.ratePaused = false
        fields.sentRange = false
        fields.redirectTarget = nil
        fields.announcedEnd = nil
        fields.answered = false
        fields.requestStart = fields.pos
    }
}
