import Foundation
import Testing

@testable import JGMirror

/// `ResponseHead` reads a response's head line by line as libcurl hands it over.
@Suite struct ResponseHeadTests {
    func parse(_ lines: [String]) -> ResponseHead {
        var head = ResponseHead()
        for line in lines { head.consume(line: line) }
        return head
    }

    @Test func readsWhatTheEngineNeeds() {
        let head = parse([
            "HTTP/1.1 206 Partial Content\r\n", "content-RANGE:  bytes 100-199/1000 \r\n", "Content-Length: 100\r\n",
            "Accept-Ranges: none, Bytes\r\n", "ETag: \"v1\"\r\n", "Last-Modified: Sun, 22 Nov 2026 10:00:00 GMT\r\n",
            "Retry-After: 7\r\n", "X-Other: 5\r\n", "\r\n",
        ])
        #expect(head.status == 206)
        #expect(head.rangeStart == 100 && head.rangeEnd == 200 && head.rangeTotal == 1000)
        #expect(head.contentLength == 100)
        #expect(head.acceptsRanges)
        #expect(head.validators == Validators(etag: "\"v1\"", lastModified: "Sun, 22 Nov 2026 10:00:00 GMT"))
        #expect(head.retryAfter == 7)
    }

    @Test func aNewStatusLineStartsOverAndBadNumbersAreIgnored() {
        let head = parse([
            "HTTP/1.1 302 Found\r\n", "ETag: old\r\n", "HTTP/2 200\r\n", "Content-Length: 12x\r\n",
            "Content-Range: bytes */77\r\n", "Content-Length: 99999999999999999999\r\n", "no colon here\r\n",
        ])
        #expect(head.status == 200)
        #expect(head.validators == Validators())
        #expect(head.contentLength == nil)
        #expect(head.rangeTotal == 77 && head.rangeStart == nil)
        #expect(!head.acceptsRanges)
    }
}
