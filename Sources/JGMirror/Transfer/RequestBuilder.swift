import CCurl

/// Builds the libcurl handle for one request of a worker: the URL, timeouts, TLS,
/// the headers that origin may get (docs/safety.md#redirects-and-headers), the byte range and
/// `If-Range`, and the callbacks that hand the response to the worker's item.
enum RequestBuilder {
    /// What one request asks for.
    struct Shape {
        var url: String
        /// First byte; with `end` nil and `from` 0 and `ranged` false, no `Range` header.
        var from: Int64
        /// One past the last byte asked for; nil asks to the end of the file.
        var end: Int64?
        /// Send a `Range` header (also `bytes=0-`, which tells whether ranges work).
        var ranged: Bool
        /// `If-Range` value, for requests that continue bytes already present.
        var ifRange: String?
        /// `If-None-Match` / `If-Modified-Since` lines: the item's first request only.
        var conditions: [String] = []
    }

    /// Sets `easy` (new, or reset) up for `worker`'s next request.
    static func setUp(
        _ easy: CurlEasy, for worker: Worker, _ shape: Shape, request: TransferRequest,
        configuration: TransferEngine.Configuration
    ) throws(TransferError) {
        let url = shape.url
        // Only an item's first connection may speak HTTP/2 (over TLS): libcurl would
        // multiplex the others onto it, and `connections` counts TCP connections
        // (docs/engine.md#connections-and-ranges).
        let http2 = worker.slot == 0 && url.hasPrefix(asciiCaseInsensitive: "https:")
        var headers = try configure(easy, url: url, http2: http2, request: request, configuration: configuration)
        if http2 {
            // Wait for a connection being set up to say whether it multiplexes (HTTP/2)
            // rather than open another: a burst of small items then shares one.
            try easy.set(CURLOPT_PIPEWAIT, 1)
        }
        headers += shape.conditions
        if shape.ranged {
            try easy.set(CURLOPT_RANGE, "\(shape.from)-" + (shape.end.map { String($0 - 1) } ?? ""))
            if let ifRange = shape.ifRange { headers.append("If-Range: \(ifRange)") }
        }
        try easy.setHeaders(headers)
        if worker.freshConnection { try easy.set(CURLOPT_FRESH_CONNECT, 1) }
        let userdata = Unmanaged.passUnretained(worker).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: userdata)
        try easy.set(CURLOPT_HEADERDATA, pointer: userdata)
        _ = jg_easy_setopt_write_cb(easy.handle) { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            let worker = Unmanaged<Worker>.fromOpaque(userdata).takeUnretainedValue()
            return worker.item.receive(worker, UnsafeRawBufferPointer(start: data, count: size * count))
        }
        _ = jg_easy_setopt_header_cb(easy.handle) { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            let worker = Unmanaged<Worker>.fromOpaque(userdata).takeUnretainedValue()
            let length = size * count
            worker.head.consume(line: UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
    }

    /// What every request of an item sets alike, so that they can share connections:
    /// URL, timeouts, protocols, TLS, HTTP version; returns the header lines
    /// docs/safety.md#redirects-and-headers allows for that origin.
    private static func configure(
        _ easy: CurlEasy, url: String, http2: Bool, request: TransferRequest, configuration: TransferEngine.Configuration
    ) throws(TransferError) -> [String] {
        try easy.set(CURLOPT_URL, url)
        try easy.set(CURLOPT_NOSIGNAL, 1)
        // Redirects are followed by the item, one request per hop, so that the headers
        // go only where docs/safety.md#redirects-and-headers lets them (see `Redirect`).
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_PROTOCOLS_STR, configuration.allowFileURLs ? "http,https,file" : "http,https")
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout(for: url) * 1000))
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, Int(min(configuration.rateFloor(for: url), Int64(Int32.max))))
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.options.timeout.rounded(.up))))
        // A request that may speak HTTP/2 keeps libcurl's own buffer size: 7.88 refuses
        // the option on a handle reused from an HTTP/2 request, and its HTTP/2 layer
        // reads the connection through a fixed buffer anyway.
        if !http2 { try easy.set(CURLOPT_BUFFERSIZE, 512 * 1024) }
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        // `~/.netrc` credentials, like the manifest's headers, go only to the item's own
        // origins, never to where a redirect leads (libcurl matches its host alone, so a
        // redirect to plain HTTP on that host would carry them in the clear).
        if Curl.hasNetrc, Redirect.sendsHeaders(to: url, sources: request.sources, forward: false) {
            try easy.set(CURLOPT_NETRC, jg_netrc_optional())
        }
        try easy.set(CURLOPT_HTTP_VERSION, http2 ? jg_http_version_2tls() : jg_http_version_1_1())
        if request.options.insecure {
            try easy.set(CURLOPT_SSL_VERIFYPEER, 0)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let caCert = configuration.caCert {
            try easy.set(CURLOPT_CAINFO, caCert)
            if let capath = Curl.defaultCAPath { try easy.set(CURLOPT_CAPATH, capath) }
        }
        guard !request.options.headerLines.isEmpty,
            Redirect.sendsHeaders(to: url, sources: request.sources, forward: request.options.forwardHeaders)
        else { return [userAgent] }
        var headers = request.options.headerLines
        if !headers.contains(where: { $0.hasPrefix(asciiCaseInsensitive: "user-agent:") }) { headers.append(userAgent) }
        return headers
    }

    /// Sent unless the manifest or `--header` names another.
    private static let userAgent = "User-Agent: jgmirror/\(JGMirrorVersion.string)"
}
