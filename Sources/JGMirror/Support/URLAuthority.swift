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
        guard let schemeEnd = url.range(ofASCII: "://") else { return nil }
        let rest = url.utf8[schemeEnd.upperBound...]
        scheme = url[..<schemeEnd.lowerBound]
        start = schemeEnd.upperBound
        end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        at = rest[..<end].lastIndex(of: UInt8(ascii: "@"))
    }

    /// Where the host begins: after the credentials, if any.
    func hostStart(in url: String) -> String.Index { at.map { url.utf8.index(after: $0) } ?? start }

    /// Whether a host follows the credentials (`http://user@/x` has none).
    func hasHost(in url: String) -> Bool { hostStart(in: url) < end }
}
