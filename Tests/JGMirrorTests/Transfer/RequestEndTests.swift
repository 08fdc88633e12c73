import Testing

@testable import JGMirror

/// `RequestEnd` judges how a request ended, without a server.
@Suite struct RequestEndTests {
    private let dropped = TransferError.retryable(.connection, "connection dropped")
    private let region = SegmentBook.Region(start: 0, next: 600, end: 1000)

    @Test func aResponseEndingShortOfItsRangeIsOneFailureNamedForItsStatus() {
        var facts = RequestEnd.Facts(region: region, requestedEnd: 1000, position: 600, status: 206, url: "http://u:p@h/f")
        guard case .failed(let short206) = RequestEnd.judge(facts) else {
            Issue.record("a short 206 must fail the request")
            return
        }
        #expect(short206.code == .protocolViolation && short206.retryable)
        #expect(short206.message.contains("400 bytes short") && !short206.message.contains("u:p"))
        facts.status = 200
        guard case .failed(let short200) = RequestEnd.judge(facts) else {
            Issue.record("a short 200 must fail the request")
            return
        }
        #expect(short200.code == .connection && short200.retryable)
        // A server that sent less than asked but ended its own range (Content-Range
        // shorter than the region) delivered it: the connection asks for the rest.
        facts.requestedEnd = 600
        #expect(RequestEnd.judge(facts) == .delivered)
    }

    @Test func failuresComeInOrderCallbackThenTruncationThenTransport() {
        let decided = TransferError.http(503, url: "http://h/f")
        var facts = RequestEnd.Facts(
            callbackError: decided, truncated: true, transportError: dropped, region: region, requestedEnd: 1000)
        #expect(RequestEnd.judge(facts) == .failed(decided))
        facts.callbackError = nil
        // The region ended first (a steal): stopping mid-body is success, not a dropped connection.
        #expect(RequestEnd.judge(facts) == .delivered)
        facts.truncated = false
        #expect(RequestEnd.judge(facts) == .failed(dropped))
    }

    @Test func aBodyOfUnannouncedLengthEndsTheFileOrContradictsTheManifest() {
        var facts = RequestEnd.Facts(position: 1234, status: 200, lengthKnown: false)
        #expect(RequestEnd.judge(facts) == .ended(length: 1234))
        facts.expectedSize = 1234
        #expect(RequestEnd.judge(facts) == .ended(length: 1234))
        facts.expectedSize = 2000
        guard case .failItem(let error) = RequestEnd.judge(facts) else {
            Issue.record("a length the manifest contradicts must fail the item")
            return
        }
        #expect(error.code == .sizeMismatch)
        // Dropped before the server closed it: a failure, not the file's end.
        facts.transportError = dropped
        #expect(RequestEnd.judge(facts) == .failed(dropped))
    }

    @Test func aRegionCompletedBeforeTheResponseEndedIsDelivered() {
        // A steal cut the region at 600 while the request had asked up to 1000: the
        // response stopping there is not short.
        let cut = SegmentBook.Region(start: 0, next: 600, end: 600)
        #expect(RequestEnd.judge(.init(region: cut, requestedEnd: 1000, position: 600, status: 206)) == .delivered)
    }
}
