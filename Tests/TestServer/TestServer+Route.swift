import Foundation
import Synchronization

/// What a route answers: its body and validators, and the faults a test switches on.
extension TestServer {
    /// What a request can be made to suffer.
    public enum Fault: Sendable, Equatable {
        /// Answer this status with an empty body (and `Retry-After` when given).
        case status(Int, retryAfter: Int? = nil)
        /// Answer this status with an empty body and these header lines (`Name: value`):
        /// a `Retry-After` date, a `RateLimit-Reset`.
        case statusWithHeaders(Int, [String])
        /// Close the connection after this many body bytes.
        case drop(afterBytes: Int)
        /// Send this many body bytes, then nothing for `seconds`, then close.
        case stall(afterBytes: Int, seconds: Double)
        /// Answer a Range request with the whole body (200).
        case ignoreRange
        /// Answer a Range request from its start to the body's end (206, announced so
        /// in `Content-Range`): more than asked, but what the server says it sends.
        case toTheEnd
        /// Send these bytes instead of an HTTP response, then close (a server that
        /// speaks something else).
        case raw([UInt8])
        /// Answer nothing for this many seconds, then close: a host that accepts and
        /// never answers.
        case silence(seconds: Double)
        /// Send this response's body at this many bytes per second (one slow connection).
        case slow(bytesPerSecond: Int)
        /// Send this many body bytes at the route's pace, the rest at `bytesPerSecond`
        /// (a connection whose path degrades part-way).
        case slowsDown(afterBytes: Int, bytesPerSecond: Int)
        /// Announce the asked range in `Content-Range` but send only this many bytes,
        /// with a `Content-Length` that matches them (a body shorter than its range).
        case short(bytes: Int)
    }

    /// The body a redirect carries.
    public enum RedirectBody: Sendable, Equatable {
        /// `Content-Length: 0`.
        case none
        /// This many bytes with a `Content-Length`.
        case sized(Int)
        /// This many bytes as a chunked body (in 1 KiB chunks).
        case chunked(Int)
    }

    /// One path the server answers.
    public struct Route: Sendable {
        public var body: [UInt8]
        public var etag: String?
        public var lastModified: String?
        /// Never honour Range (200 with the whole body).
        public var ignoreRange = false
        /// No Content-Length: the body ends when the connection closes.
        public var noLength = false
        /// Per-connection throttle in bytes per second.
        public var bytesPerSecond: Int?
        /// Send the body one byte at a time, this many seconds apart: a source that
        /// trickles (a byte now and then never lets a request time out).
        public var trickleInterval: Double?
        /// Answer `redirectStatus` (302 unless set) to this location instead.
        public var redirect: String?
        /// The status of the redirect to `redirect`.
        public var redirectStatus = 302
        /// What the redirect carries (Apache's and nginx's redirects have an HTML
        /// body, Caddy's a chunked one): it is not the file.
        public var redirectBody = RedirectBody.none
        /// Bytes sent beyond the announced length.
        public var extraBytes = 0
        /// Bytes beyond the announced length left on the connection and sent when its
        /// next request arrives, before that request's answer: a length lie the client
        /// reads as the start of its next response.
        public var extraBytesLater = 0
        /// Announce this `Content-Length` instead (a server claiming a body it never
        /// sends: 10^15 bytes), send the body there is, then close.
        public var announcedLength: Int?
        /// A chunked body that never ends (bounded at 1 GiB so the test stops by itself).
        public var endless = false
        /// Extra response header lines (`Name: value`), sent as given.
        public var extraHeaders: [String] = []
        /// Seconds to wait before each response head, like a round trip.
        public var headDelay: Double?
        /// Paths that must have been asked for before this one is answered: waited for
        /// (at most 10 s), else answered 503, so a client that asks one file after
        /// another fails where one that asks them together does not.
        public var answeredOnceAsked: [String] = []
        /// Seconds more before answering a `HEAD`.
        public var extraHEADDelay: Double?
        /// Answer `If-Range` carrying the Last-Modified date with the whole file (200),
        /// as Apache does while the file's ETag is still weak.
        public var refuseDateIfRange = false
        /// Picks a fault by request number (0-based, per path).
        public var fault: @Sendable (Int) -> Fault? = { _ in nil }
        /// Picks a fault by the byte a ranged GET starts at, whatever order the
        /// requests arrive in; used instead of `fault` when set.
        public var faultAtStart: (@Sendable (Int) -> Fault?)?

        public init(body: [UInt8], etag: String? = nil, lastModified: String? = nil) {
            self.body = body
            self.etag = etag
            self.lastModified = lastModified
        }
    }
}
