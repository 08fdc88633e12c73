/// The redirect rules (docs/safety.md#redirects-and-headers), decided without curl: the engine
/// follows redirects itself so it can choose, hop by hop, which headers go along.
///
/// libcurl, left to follow by itself, strips only `Authorization` and `Cookie` when
/// a redirect changes host; every other header of the manifest or `--header` (an
/// API key, a token) would reach whatever origin the server names.
enum Redirect {
    /// Most redirects one request may follow.
    static let maxHops = 10

    /// Whether the headers written for `sources` (an item's URL and mirrors) may be
    /// sent to `url`: it has the origin of one of them, or the item forwards them.
    static func sendsHeaders(to url: String, sources: [String], forward: Bool) -> Bool {
        if forward || sources.contains(url) { return true }
        guard let target = Origin.of(url) else { return false }
        return sources.contains { Origin.of($0) == target }
    }

    /// The URL to request after a redirect to `target` (the `Location`, as libcurl
    /// resolved it), or why it must not be followed. `hops` counts the redirects
    /// already followed for this request.
    static func nextHop(_ target: String, from url: String, hops: Int) -> Result<String, TransferError> {
        guard hops < maxHops else {
            return .failure(
                TransferError(code: .redirect, message: "more than \(maxHops) redirects from \(Redactor.redactURL(url))"))
        }
        let scheme = URLAuthority(target).map { $0.scheme.lowercased() }
        guard scheme == "http" || scheme == "https" else {
            return .failure(
                TransferError(
                    code: .redirect,
                    message: "refused to follow \(Redactor.redactURL(url)) to \(Redactor.redactURL(target)): only http and https")
            )
        }
        return .success(target)
    }
}
