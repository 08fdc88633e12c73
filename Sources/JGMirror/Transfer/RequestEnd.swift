/// What a finished request means for its connection (docs/engine.md#retries), decided without
/// curl: how it ended and what it delivered go in, a verdict comes out. A response
/// that was a redirect is followed instead, and decisions taken on the response head
/// (`HeadHandler`) come before this; `RequestCycle` carries the verdict out.
///
/// A response that ends short of what it announced is one failure, as a dropped
/// connection is: a short `206` breaks the protocol, a short `200` the connection.
enum RequestEnd {
    /// How a request ended, and where its connection stands.
    struct Facts: Equatable {
        /// Why the request must count as failed, decided inside a callback.
        var callbackError: TransferError?
        /// The request was cut before its response ended (its region ended first, or
        /// the response ran past the range asked for): stopping was success.
        var truncated = false
        /// libcurl's failure; nil when it reported success.
        var transportError: TransferError?
        /// The connection's region in the book; nil when it has none or the
        /// length is not known yet.
        var region: SegmentBook.Region?
        /// One past the last byte the request could deliver, when known.
        var requestedEnd: Int64?
        /// The next byte the connection would have written.
        var position: Int64 = 0
        /// The response's status.
        var status = 0
        /// The file's length is known (from a response head or resume state).
        var lengthKnown = true
        /// The length the manifest promises (`size`).
        var expectedSize: Int64?
        /// Where the request went, for messages.
        var url = ""
    }

    /// The verdict on one finished request.
    enum Verdict: Equatable {
        /// The request failed; `RetryPolicy` decides what the connection does.
        case failed(TransferError)
        /// The request delivered what it could: its connection asks for the rest of
        /// its region, or new work, or retires.
        case delivered
        /// A body of unannounced length ended where the server closed it: the file
        /// is `length` bytes, and the request delivered it.
        case ended(length: Int64)
        /// That length contradicts the manifest: the item fails.
        case failItem(TransferError)
    }

    /// Judges how the request in `facts` ended.
    static func judge(_ facts: Facts) -> Verdict {
        if let error = facts.callbackError { return .failed(error) }
        if facts.truncated { return .delivered }
        if let error = facts.transportError { return .failed(error) }
        if let region = facts.region, region.next < region.end, let asked = facts.requestedEnd, facts.position < asked {
            return .failed(
                .retryable(
                    facts.status == 206 ? .protocolViolation : .connection,
                    "response ended \(asked - facts.position) bytes short of what it announced (\(Redactor.redactURL(facts.url)))"
                ))
        }
        guard !facts.lengthKnown else { return .delivered }
        let length = facts.position
        if let expected = facts.expectedSize, length != expected {
            return .failItem(.sizeMismatch("received \(length) bytes, the manifest says \(expected)"))
        }
        return .ended(length: length)
    }
}
