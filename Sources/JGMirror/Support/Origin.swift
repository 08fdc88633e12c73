/// A URL's origin, `scheme://host:port`: scheme and host lower-cased, credentials,
/// path, query and fragment left out, and the scheme's default port written out, so
/// that `http://h/a` and `http://H:80/b` are one origin.
///
/// The one parser of origins: the redirect rules (which origins the manifest's
/// headers may reach, docs/safety.md#redirects-and-headers), the cap on connections per host and
/// the host table (docs/hosts.md#host-states) all key by it.
enum Origin {
    /// The origin of `url`; nil for a URL without `://`.
    static func of(_ url: String) -> String? {
        // Several times per request: on the bytes, lower-casing ASCII as it copies.
        var bytes = url
        return bytes.withUTF8 { utf8 -> String? in
            guard let authority = URLAuthority.byteOffsets(in: utf8) else { return nil }
            let prefix = UnsafeBufferPointer(rebasing: utf8[..<authority.start])  // `scheme://`
            var hostPort = UnsafeBufferPointer(rebasing: utf8[authority.host..<authority.end])
            var hasPort = false
            // A port follows the last `:` unless that colon is inside an IPv6 literal;
            // an empty one (`http://h:/`) is the default port.
            let closing = hostPort.lastIndex(of: UInt8(ascii: "]"))
            if let colon = hostPort.lastIndex(of: UInt8(ascii: ":")), closing.map({ colon > $0 }) ?? true {
                if colon == hostPort.count - 1 {
                    hostPort = UnsafeBufferPointer(rebasing: hostPort[..<colon])
                } else {
                    hasPort = true
                }
            }
            let port = hasPort ? "" : defaultPort(scheme: UnsafeBufferPointer(rebasing: utf8[..<authority.scheme]))
            guard prefix.allSatisfy({ $0 < 0x80 }), hostPort.allSatisfy({ $0 < 0x80 }) else {
                return (String(decoding: prefix, as: UTF8.self) + String(decoding: hostPort, as: UTF8.self)).lowercased() + port
            }
            return String(unsafeUninitializedCapacity: prefix.count + hostPort.count + port.utf8.count) { key in
                var count = 0
                for byte in [prefix, hostPort].joined() {
                    key[count] = TextSearch.lowerASCII(byte)
                    count += 1
                }
                for byte in port.utf8 {
                    key[count] = byte
                    count += 1
                }
                return count
            }
        }
    }

    /// `of(url)`, or the text itself when it is not an absolute URL: the key of a map
    /// of hosts, which every request's URL has.
    static func key(_ url: String) -> String { of(url) ?? url }

    /// `:443` for https, `:80` for http, nothing for another scheme (`file`).
    private static func defaultPort(scheme: UnsafeBufferPointer<UInt8>) -> String {
        func named(_ name: StaticString) -> Bool {
            scheme.count == name.utf8CodeUnitCount
                && zip(scheme, UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)).allSatisfy {
                    TextSearch.lowerASCII($0) == $1
                }
        }
        return named("https") ? ":443" : named("http") ? ":80" : ""
    }
}
