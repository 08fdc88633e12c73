/// Where the parts of an absolute URL's authority lie, found on UTF-8 bytes:
/// `scheme://` `user:password@` `host:port`, up to the first `/`, `?` or `#`.
struct URLAuthority {
    /// What comes before `://`, as written.
    let scheme: Substring
    /// The first character after `://`.
    let start: String.Index
    /// The `/`, `?` or `#` that ends the authority, or the URL's end.
    let end: String.Index
    /// The last `@` inside the authority, when the URL carries credentials.
    let at: String.Index?

    /// Nil when `url` has no `://`.
    init?(_ url: String) {
        var bytes = url
        guard let offsets = bytes.withUTF8(Self.byteOffsets) else { return nil }
        let utf8 = url.utf8
        start = utf8.index(utf8.startIndex, offsetBy: offsets.start)
        scheme = url[..<utf8.index(utf8.startIndex, offsetBy: offsets.scheme)]
        end = utf8.index(utf8.startIndex, offsetBy: offsets.end)
        at = offsets.host > offsets.start ? utf8.index(utf8.startIndex, offsetBy: offsets.host - 1) : nil
    }

    /// The same on a URL's bytes, as offsets: where `://` begins, after it, where the
    /// host begins (past any credentials), and where the authority ends.
    static func byteOffsets(in url: UnsafeBufferPointer<UInt8>) -> (scheme: Int, start: Int, host: Int, end: Int)? {
        let separator: StaticString = "://"
        let needle = UnsafeBufferPointer(start: separator.utf8Start, count: separator.utf8CodeUnitCount)
        guard let scheme = TextSearch.offset(of: needle, in: url) else { return nil }
        let start = scheme + needle.count
        let end =
            url[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? url.count
        let host = url[start..<end].lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? start
        return (scheme, start, host, end)
    }

    /// Where the host begins: after the credentials, if any.
    func hostStart(in url: String) -> String.Index { at.map { url.utf8.index(after: $0) } ?? start }

    /// Whether a host follows the credentials (`http://user@/x` has none).
    func hasHost(in url: String) -> Bool { hostStart(in: url) < end }
}
