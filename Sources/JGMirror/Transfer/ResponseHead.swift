import Foundation

/// The status line and headers of the response a request ended on (the last one,
/// after redirects), parsed as libcurl hands them over line by line.
struct ResponseHead {
    var status = 0
    var contentLength: Int64?
    /// `Content-Range: bytes a-b/total`.
    var rangeStart: Int64?
    var rangeEnd: Int64?
    var rangeTotal: Int64?
    var acceptsRanges = false
    var validators = Validators()
    var retryAfter: Double?

    /// Feeds one header line; a new status line starts over (redirects, 100-continue).
    mutating func consume(line raw: Substring) {
        let line = raw.trimmedASCII
        if line.hasPrefix("HTTP/") {
            self = ResponseHead()
            let parts = line.split(separator: " ", maxSplits: 2)
            if parts.count >= 2 { status = Int(parts[1]) ?? 0 }
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = String(line[line.index(after: colon)...].trimmedASCII)
        switch name {
        case "content-length": contentLength = Int64(value)
        case "content-range": parseContentRange(value)
        case "accept-ranges": acceptsRanges = value.lowercased().contains(ascii: "bytes")
        case "etag": validators.etag = value
        case "last-modified": validators.lastModified = value
        case "retry-after": retryAfter = Double(value)
        default: break
        }
    }

    private mutating func parseContentRange(_ value: String) {
        // bytes 0-499/1234  or  bytes */1234
        let text = value.lowercased()
        guard text.hasPrefix("bytes ") else { return }
        let spec = text.dropFirst(6)
        let halves = spec.split(separator: "/")
        guard halves.count == 2 else { return }
        rangeTotal = Int64(halves[1])
        let bounds = halves[0].split(separator: "-")
        if bounds.count == 2 {
            rangeStart = Int64(bounds[0])
            rangeEnd = Int64(bounds[1]).map { $0 + 1 }
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces, tabs, CR and LF (Foundation's trimming
    /// bridges through NSString, once per header line of every response).
    var trimmedASCII: Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return self[first...last]
    }
}
