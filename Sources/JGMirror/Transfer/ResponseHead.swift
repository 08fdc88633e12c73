import Foundation

/// The status line and headers of the response a request ended on (the last one,
/// after redirects), parsed as libcurl hands them over line by line.
///
/// Lines are read as bytes: every response of every request passes through here,
/// and only the two validators ever become Swift strings.
struct ResponseHead {
    var status = 0
    var contentLength: Int64?
    /// `Content-Range: bytes a-b/total`.
    var rangeStart: Int64?
    var rangeEnd: Int64?
    var rangeTotal: Int64?
    var acceptsRanges = false
    var validators = Validators()
    /// `Date` as sent: when the server made the response, on its own clock, which
    /// judges whether the validators prove anything (`Validators.proveNothing`).
    var date: String?
    var retryAfter: Double?
    /// `Retry-After` and `RateLimit-Reset` as sent, for `ThrottleHint` (kept only on a
    /// 429 or 503, the answers that cool a host).
    var retryAfterText: String?
    var rateLimitReset: String?
    /// A redirect's `Location`, as sent (only kept for a 3xx). libcurl resolves it
    /// only once the response has ended, and a redirect with a body is judged, and
    /// cut, at its first body byte.
    var location: String?
    /// The blank line that ends the head arrived: a connection closed inside the
    /// head leaves it false (libcurl ends such a response without an error).
    var complete = false

    /// Feeds one header line; a new status line starts over (redirects, 100-continue).
    mutating func consume(line raw: UnsafeRawBufferPointer) {
        let line = HeaderBytes(raw).trimmed
        if line.count == 0 {
            // A 1xx head (100 Continue, 103 Early Hints) is followed by the real one.
            complete = !(100...199).contains(status)
            return
        }
        if line.hasPrefix("HTTP/") {
            self = ResponseHead()
            // HTTP/1.1 206 Partial Content
            guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return }
            let rest = line.dropFirst(space + 1)
            status = Int(rest.prefix(rest.firstIndex(of: UInt8(ascii: " ")) ?? rest.count).integer ?? 0)
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = line.prefix(colon)
        let value = line.dropFirst(colon + 1).trimmed
        if name.equalsIgnoringCase("content-length") {
            contentLength = value.integer
        } else if name.equalsIgnoringCase("content-range") {
            parseContentRange(value)
        } else if name.equalsIgnoringCase("accept-ranges") {
            acceptsRanges = value.containsIgnoringCase("bytes")
        } else if name.equalsIgnoringCase("etag") {
            validators.etag = value.string
        } else if name.equalsIgnoringCase("last-modified") {
            validators.lastModified = value.string
        } else if name.equalsIgnoringCase("date") {
            date = value.string
        } else if (300...399).contains(status), name.equalsIgnoringCase("location") {
            location = value.string
        } else if name.equalsIgnoringCase("retry-after") {
            retryAfter = value.integer.map(Double.init)
            if status == 429 || status == 503 { retryAfterText = value.string }
        } else if status == 429 || status == 503, name.equalsIgnoringCase("ratelimit-reset") {
            rateLimitReset = value.string
        }
    }

    /// Feeds one header line given as text (tests).
    mutating func consume(line: String) {
        var copy = line
        copy.withUTF8 { consume(line: UnsafeRawBufferPointer($0)) }
    }

    private mutating func parseContentRange(_ value: HeaderBytes) {
        // bytes 0-499/1234  or  bytes */1234
        guard value.count > 6, value.prefix(6).equalsIgnoringCase("bytes ") else { return }
        let spec = value.dropFirst(6)
        guard let slash = spec.firstIndex(of: UInt8(ascii: "/")) else { return }
        rangeTotal = spec.dropFirst(slash + 1).integer
        let bounds = spec.prefix(slash)
        if let dash = bounds.firstIndex(of: UInt8(ascii: "-")),
            let start = bounds.prefix(dash).integer, let end = bounds.dropFirst(dash + 1).integer
        {
            rangeStart = start
            rangeEnd = end + 1
        }
    }
}

/// A borrowed slice of a header line, valid only inside the header callback.
struct HeaderBytes {
    private let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var count: Int { bytes.count }

    /// Without leading and trailing spaces, tabs, CR and LF.
    var trimmed: HeaderBytes {
        func blank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var lower = 0
        var upper = bytes.count
        while lower < upper, blank(bytes[lower]) { lower += 1 }
        while upper > lower, blank(bytes[upper - 1]) { upper -= 1 }
        return slice(lower, upper)
    }

    func firstIndex(of byte: UInt8) -> Int? { bytes.firstIndex(of: byte) }

    func prefix(_ length: Int) -> HeaderBytes { slice(0, min(length, bytes.count)) }

    func dropFirst(_ length: Int) -> HeaderBytes { slice(min(length, bytes.count), bytes.count) }

    func hasPrefix(_ literal: StaticString) -> Bool {
        literal.utf8CodeUnitCount <= bytes.count && prefix(literal.utf8CodeUnitCount).matches(literal, ignoringCase: false)
    }

    func equalsIgnoringCase(_ literal: StaticString) -> Bool {
        literal.utf8CodeUnitCount == bytes.count && matches(literal, ignoringCase: true)
    }

    func containsIgnoringCase(_ literal: StaticString) -> Bool {
        let length = literal.utf8CodeUnitCount
        guard length <= bytes.count else { return false }
        return (0...(bytes.count - length)).contains { slice($0, $0 + length).matches(literal, ignoringCase: true) }
    }

    /// A non-negative decimal integer, all of the slice; nil otherwise (or on overflow).
    var integer: Int64? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int64(byte - 0x30)
        }
        return value
    }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    private func slice(_ lower: Int, _ upper: Int) -> HeaderBytes {
        HeaderBytes(UnsafeRawBufferPointer(rebasing: bytes[lower..<upper]))
    }

    private func matches(_ literal: StaticString, ignoringCase: Bool) -> Bool {
        literal.withUTF8Buffer { expected in
            for index in 0..<expected.count {
                let byte = ignoringCase ? TextSearch.lowerASCII(bytes[index]) : bytes[index]
                if byte != expected[index] { return false }
            }
            return true
        }
    }
}
