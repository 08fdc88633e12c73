/// One connection slot of an item: the range it owns, where it has written to, its
/// retry budget and source, and the request currently in flight.
///
/// Confined to the engine thread.
final class Worker {
    enum State {
        /// Has a range and waits for a free connection slot to its host.
        case ready
        /// Has a range and waits out a retry delay (monotonic seconds).
        case backoff(until: Double)
        /// A request is in flight.
        case active
    }

    unowned let item: ItemTransfer
    /// 0 for the first connection of the item; others are forced to HTTP/1.1 so the
    /// segments of one item never share a multiplexed connection.
    let slot: Int
    var state: State = .ready
    /// Index into the item's sources.
    var sourceIndex = 0
    /// Sources this worker has used, to stop once it has tried each.
    var sourcesTried = 1
    var retriesLeft: Int
    /// Retries used in a row, for the backoff exponent.
    var consecutiveFailures = 0

    /// Where the last response redirected to, and how many redirects led there; the
    /// next request goes there. Cleared when a request ends any other way.
    var redirectURL: String?
    var redirects = 0

    /// Next byte to write.
    var pos: Int64 = 0
    /// End of the owned range (exclusive); nil streams to the end of the body.
    var end: Int64?
    /// The end the current request asked for; a body reaching past it lies.
    var requestedEnd: Int64?
    /// Where the current request started, to tell a short body from no body.
    var requestStart: Int64 = 0
    /// The most one request asks for: a worker fetches its range as a run of pieces
    /// over its kept-alive connection (see `Pace`).
    var pieceSize = Pace.basePiece

    // Per request:
    var easy: CurlEasy?
    var host = ""
    var url = ""
    var sentRange = false
    var head = ResponseHead()
    var headProcessed = false
    /// The owner cut this request's range (work stealing): stopping is success.
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

    var remaining: Int64? { end.map { $0 - pos } }

    func assign(_ range: ByteRange) {
        pos = range.lower
        end = range.upper
    }

    func resetRequest() {
        easy = nil
        head = ResponseHead()
        headProcessed = false
        truncated = false
        error = nil
        ratePaused = false
        sentRange = false
        redirectTarget = nil
    }
}
