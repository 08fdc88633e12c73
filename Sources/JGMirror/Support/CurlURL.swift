import CCurl

/// libcurl's URL parser (`curl_url`, docs/manifest.md#values): the parser that will send a request
/// decides at plan time whether its URL can be sent at all, so a malformed one
/// (`http://[::1`, a port past 65535, a host with a space) is refused with its line
/// instead of failing after a run's worth of retries. Also resolves a redirect's
/// `Location` against the URL it answered, as libcurl would.
///
/// Owns one handle, reused for every URL it checks; confined to its owner (a
/// manifest parser, one `Download`), hence not `Sendable`.
final class CurlURL {
    private let handle: OpaquePointer?
    /// The `scheme://authority` of the last URL libcurl accepted. The items of a
    /// manifest mostly share one, and the authority is what libcurl refuses: in the
    /// path, query and fragment it refuses only white space and control characters,
    /// which `Rules.urlProblem` checks over the whole URL first. A URL with the same
    /// authority as the one before is therefore not parsed again (100,000 items
    /// would pay about 0.1 s of CPU to be parsed each).
    private var lastAuthority: Substring = ""

    init() { handle = curl_url() }

    deinit { curl_url_cleanup(handle) }

    /// What libcurl finds wrong with `url` (whose scheme, host and characters
    /// `Rules.urlProblem` has accepted), or nil.
    func problem(_ url: String) -> String? {
        guard let handle else { return nil }  // out of memory: the request will say
        let authority = URLAuthority(url).map { url[..<$0.end] } ?? Substring(url)
        if authority.utf8.elementsEqual(lastAuthority.utf8) { return nil }
        // The flags libcurl itself parses a request's URL with.
        let code = curl_url_set(handle, CURLUPART_URL, url, UInt32(CURLU_NON_SUPPORT_SCHEME))
        guard code == CURLUE_OK else {
            lastAuthority = ""
            return "URL '\(Rules.abbreviated(Redactor.redactURLAndQuery(url)))' cannot be used: "
                + String(cString: curl_url_strerror(code))
        }
        lastAuthority = authority
        return nil
    }

    /// `reference` (a `Location` header: absolute, or relative to `base`) resolved
    /// against `base` as libcurl resolves a redirect it follows (spaces and bytes past
    /// ASCII percent-encoded); nil when either is not a URL.
    static func resolve(_ reference: String, against base: String) -> String? {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, base, UInt32(CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK,
            curl_url_set(handle, CURLUPART_URL, reference, UInt32(CURLU_NON_SUPPORT_SCHEME | CURLU_ALLOW_SPACE | CURLU_URLENCODE))
                == CURLUE_OK
        else { return nil }
        var resolved: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_URL, &resolved, 0) == CURLUE_OK, let resolved else { return nil }
        defer { curl_free(resolved) }
        return String(cString: resolved)
    }
}
