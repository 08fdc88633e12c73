import Testing

@testable import JGMirror

/// `ResponseJudge` decides from a head and what is known, without a server.
@Suite struct ResponseJudgeTests {
    private func head(_ lines: String...) -> ResponseHead {
        var head = ResponseHead()
        for line in lines { head.consume(line: line) }
        return head
    }

    private let url = "http://h/f"

    @Test func aHeadIsCompleteAtItsBlankLineUnlessItIsAnInterimOne() {
        var head = ResponseHead()
        for line in ["HTTP/1.1 103 Early Hints\r\n", "Link: </a.css>\r\n", "\r\n"] { head.consume(line: line) }
        #expect(!head.complete, "a 1xx head is followed by the real one")
        for line in ["HTTP/1.1 206 Partial Content\r\n", "Content-Range: bytes 0-9/20\r\n"] { head.consume(line: line) }
        #expect(!head.complete && head.status == 206, "cut before its blank line")
        head.consume(line: "\r\n")
        #expect(head.complete)
    }

    @Test func aFirst206RevealsTheLengthAndAWrongRangeIsRejected() {
        let partial = head("HTTP/1.1 206 Partial", "Content-Range: bytes 0-99/1000", "ETag: \"a\"")
        #expect(ResponseJudge.judge(partial, .init(sentRange: true), url: url) == .partial(length: 1000, rangeEnd: 100))
        let elsewhere = ResponseJudge.judge(partial, .init(requestedStart: 50, sentRange: true), url: url)
        guard case .reject(let error) = elsewhere else {
            Issue.record("a 206 for another range must be rejected, got \(elsewhere)")
            return
        }
        #expect(error.code == .protocolViolation && error.retryable)
    }

    @Test func a206ForAnotherVersionRestartsFromZero() {
        let known = ResponseJudge.Known(
            sentRange: true, length: 1000, validators: Validators(etag: "\"a\""), hasData: true)
        let changed = head("HTTP/1.1 206 Partial", "Content-Range: bytes 0-99/1000", "ETag: \"b\"")
        guard case .restartFresh = ResponseJudge.judge(changed, known, url: url) else {
            Issue.record("a changed ETag must restart")
            return
        }
        let longer = head("HTTP/1.1 206 Partial", "Content-Range: bytes 0-99/2000", "ETag: \"a\"")
        guard case .restartFresh = ResponseJudge.judge(longer, known, url: url) else {
            Issue.record("a changed length must restart")
            return
        }
        // Weak and strong forms of one ETag are the same version (Apache's first second).
        let strong = head("HTTP/1.1 206 Partial", "Content-Range: bytes 0-99/1000", "ETag: W/\"a\"")
        #expect(ResponseJudge.judge(strong, known, url: url) == .partial(length: 1000, rangeEnd: 100))
    }

    @Test func a200ToARangeWithTheKnownValidatorsIsASingleStreamNotAChange() {
        let known = ResponseJudge.Known(
            requestedStart: 500, sentRange: true, length: 1000,
            validators: Validators(etag: "W/\"a\"", lastModified: "Mon, 23 Nov 2026 10:00:00 GMT"), hasData: true)
        let same = head(
            "HTTP/1.1 200 OK", "Content-Length: 1000", "Accept-Ranges: bytes", "ETag: W/\"a\"",
            "Last-Modified: Mon, 23 Nov 2026 10:00:00 GMT")
        guard case .singleStream = ResponseJudge.judge(same, known, url: url) else {
            Issue.record("unchanged validators on a 200 mean ranges refused, not a change")
            return
        }
        let other = head("HTTP/1.1 200 OK", "Content-Length: 1000", "Accept-Ranges: bytes", "ETag: \"b\"")
        guard case .restartStream(let reason) = ResponseJudge.judge(other, known, url: url) else {
            Issue.record("another ETag on a 200 is a change")
            return
        }
        #expect(reason.contains("changed"))
        var unknown = known
        unknown.validators = Validators()
        guard case .restartStream = ResponseJudge.judge(same, unknown, url: url) else {
            Issue.record("without known validators nothing proves the same version")
            return
        }
    }

    @Test func firstResponsesEmptyFilesRedirectsAndErrors() {
        let whole = head("HTTP/1.1 200 OK", "Content-Length: 10", "Accept-Ranges: bytes")
        #expect(ResponseJudge.judge(whole, .init(), url: url) == .whole(length: 10, ranges: true))
        #expect(ResponseJudge.judge(whole, .init(sentRange: true), url: url) == .whole(length: 10, ranges: false))
        let empty = head("HTTP/1.1 416 Range Not Satisfiable", "Content-Range: bytes */0")
        #expect(ResponseJudge.judge(empty, .init(sentRange: true), url: url) == .empty)
        let moved = head("HTTP/1.1 302 Found", "Location: /g")
        #expect(ResponseJudge.judge(moved, .init(), url: url, redirectTarget: "http://h/g") == .follow("http://h/g"))
        let missing = ResponseJudge.judge(head("HTTP/1.1 404 Not Found"), .init(), url: url)
        #expect(missing == .reject(.http(404, url: url)))
        var file = ResponseJudge.Known(isFileSource: true)
        file.fileLength = 7
        #expect(ResponseJudge.judge(ResponseHead(), file, url: "file:///x") == .whole(length: 7, ranges: false))
    }
}
