import CCurl
import Foundation

/// Process-wide libcurl set-up, done exactly once.
enum Curl {
    private static let initResult: CURLcode = curl_global_init(jg_global_all())

    /// Initialises libcurl on first use; throws when it cannot.
    static func ensureInitialized() throws(TransferError) {
        guard initResult == CURLE_OK else {
            throw TransferError(code: .curl, message: "libcurl failed to initialise: \(describe(initResult))")
        }
    }

    /// Whether `~/.netrc` exists. libcurl opens it on every request it is asked to
    /// consult it for, so it is only asked when there is one to read.
    static let hasNetrc: Bool = {
        guard let home = getenv("HOME") else { return true }
        return access(String(cString: home) + "/.netrc", F_OK) == 0
    }()

    static func describe(_ code: CURLcode) -> String { String(cString: curl_easy_strerror(code)) }

    /// The CA folder libcurl was built with, so `--ca-cert` adds to the system's trust
    /// instead of replacing it.
    static var defaultCAPath: String? {
        guard let info = jg_version_info(), let capath = info.pointee.capath else {
            return FileManager.default.fileExists(atPath: "/etc/ssl/certs") ? "/etc/ssl/certs" : nil
        }
        return String(cString: capath)
    }

    /// Maps a libcurl failure to a report error code, and whether retrying may help.
    /// `effectiveURL` is where the request went: after a redirect, the message names
    /// that URL as well as the one the item asked for. `duringHead`: no response
    /// head had been read when it failed.
    static func error(
        _ code: CURLcode, detail: String, url: String, effectiveURL: String? = nil, duringHead: Bool = false
    ) -> TransferError {
        var place = Redactor.redactURL(url)
        if let effectiveURL, effectiveURL != url {
            place = "\(Redactor.redactURL(effectiveURL)), redirected from \(place)"
        }
        let text = detail.isEmpty ? describe(code) : detail
        if code == CURLE_UNSUPPORTED_PROTOCOL, text.contains("HTTP/0.9") || code == CURLE_WEIRD_SERVER_REPLY {
            // libcurl takes a reply without a status line for HTTP/0.9, which it refuses.
            return TransferError(
                code: .protocolViolation,
                message: "the server at \(place) did not answer with HTTP (no status line; libcurl: \(text))")
        }
        if code == CURLE_OUT_OF_MEMORY, duringHead || text.localizedCaseInsensitiveContains("header") {
            // libcurl refuses a header over 100 KiB with "Out of memory" (before 8.6).
            return TransferError(
                code: .protocolViolation,
                message: "the server at \(place) sent a response header larger than libcurl accepts (100 KiB)")
        }
        switch code {
        case CURLE_COULDNT_CONNECT:
            return .retryable(.connect, "cannot connect to \(place): \(text)")
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .retryable(.resolve, "cannot resolve host of \(place): \(text)")
        case CURLE_OPERATION_TIMEDOUT:
            return .retryable(.timeout, "stalled: \(text) (\(place))")
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
            CURLE_HTTP3, CURLE_QUIC_CONNECT_ERROR:
            return .retryable(.connection, "connection dropped: \(text) (\(place))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED:
            return TransferError(code: .tls, message: "TLS failure with \(place): \(text)")
        case CURLE_TOO_MANY_REDIRECTS:
            return TransferError(code: .redirect, message: "more than 10 redirects from \(place)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return TransferError(
                code: .redirect, message: "refused to follow \(place) to a scheme other than http/https: \(text)")
        case CURLE_FILE_COULDNT_READ_FILE:
            return TransferError(code: .notFound, message: "cannot read \(place): \(text)")
        case CURLE_RANGE_ERROR:
            return TransferError(code: .range, message: "the server rejected a byte range (\(place)): \(text)")
        default:
            return .retryable(.transfer, "\(text) (\(place))")
        }
    }
}

/// One libcurl easy handle and everything it points at, freed together.
///
/// libcurl keeps pointers to the header list and the error buffer for the life of
/// the handle, so both live exactly as long as this object.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    private var headers: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws(TransferError) {
        try Curl.ensureInitialized()
        guard let handle = curl_easy_init() else {
            throw TransferError(code: .curl, message: "libcurl could not create a transfer handle")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try check(jg_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer), CURLOPT_ERRORBUFFER)
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headers { curl_slist_free_all(headers) }
        errorBuffer.deallocate()
    }

    /// Makes the handle as new for another request (`curl_easy_reset`), keeping what
    /// libcurl keeps: its receive buffer and caches. Reusing handles is what libcurl
    /// recommends; a new one per small file cost a calloc, a 512 KiB buffer and their
    /// page faults each time.
    func reset() throws(TransferError) {
        curl_easy_reset(handle)
        if let headers { curl_slist_free_all(headers) }
        headers = nil
        errorBuffer[0] = 0
        try check(jg_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer), CURLOPT_ERRORBUFFER)
    }

    /// libcurl's own explanation of the last failure, when it wrote one.
    var errorText: String { String(cString: errorBuffer) }

    func set(_ option: CURLoption, _ value: Int) throws(TransferError) {
        try check(jg_easy_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, _ value: Int64) throws(TransferError) {
        try check(jg_easy_setopt_off_t(handle, option, curl_off_t(value)), option)
    }

    /// libcurl copies string options, so the Swift string need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws(TransferError) {
        try check(value.withCString { jg_easy_setopt_ptr(handle, option, $0) }, option)
    }

    func set(_ option: CURLoption, pointer: UnsafeRawPointer?) throws(TransferError) {
        try check(jg_easy_setopt_ptr(handle, option, pointer), option)
    }

    /// Replaces the request headers; the list lives as long as the handle.
    func setHeaders(_ lines: [String]) throws(TransferError) {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw TransferError(code: .curl, message: "out of memory building request headers")
            }
            list = appended
        }
        try check(jg_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, list), CURLOPT_HTTPHEADER)
        if let headers { curl_slist_free_all(headers) }
        headers = list
    }

    var effectiveURL: String? {
        var pointer: UnsafeMutablePointer<CChar>?
        guard jg_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &pointer) == CURLE_OK, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// Where the response's `Location` points, resolved against the request's URL;
    /// nil when it has none. (Redirects are not followed by libcurl: see `Redirect`.)
    var redirectURL: String? {
        var pointer: UnsafeMutablePointer<CChar>?
        guard jg_easy_getinfo_string(handle, CURLINFO_REDIRECT_URL, &pointer) == CURLE_OK, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// A `CURLINFO_*_TIME_T` value of the finished request, in seconds.
    func seconds(_ info: CURLINFO) -> Double {
        var microseconds: curl_off_t = 0
        guard jg_easy_getinfo_off_t(handle, info, &microseconds) == CURLE_OK else { return 0 }
        return Double(microseconds) / 1_000_000
    }

    /// The body's length as libcurl knows it (for `file:` URLs, the file's size);
    /// nil when unknown.
    var contentLength: Int64? {
        var length: curl_off_t = -1
        _ = jg_easy_getinfo_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        return length >= 0 ? Int64(length) : nil
    }

    /// Seconds from sending the request to its first response byte: one round trip
    /// plus the server's think time.
    /// Whether the request ran on a connection an earlier request had opened (libcurl
    /// made no new one for it).
    var reusedConnection: Bool {
        var made = 0
        guard jg_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &made) == CURLE_OK else { return false }
        return made == 0
    }

    /// Whether the request has left, or is leaving: its connection is made (TLS
    /// included) and libcurl reached the point of sending. Before that, removing the
    /// handle means the server never sees the request.
    var requestSent: Bool { seconds(CURLINFO_PRETRANSFER_TIME_T) > 0 }

    var firstByteWait: Double { seconds(CURLINFO_STARTTRANSFER_TIME_T) - seconds(CURLINFO_PRETRANSFER_TIME_T) }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(TransferError) {
        guard code == CURLE_OK else {
            throw TransferError(
                code: .curl, message: "libcurl rejected option \(option.rawValue): \(Curl.describe(code))")
        }
    }
}

/// The one multi handle of a run.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init(maxPerHost: Int, maxConnections: Int) throws(TransferError) {
        try Curl.ensureInitialized()
        guard let handle = curl_multi_init() else {
            throw TransferError(code: .curl, message: "libcurl could not create a multi handle")
        }
        self.handle = handle
        _ = jg_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, maxPerHost)
        _ = jg_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, maxConnections)
    }

    deinit { curl_multi_cleanup(handle) }

    func add(_ easy: CurlEasy) -> Bool { curl_multi_add_handle(handle, easy.handle) == CURLM_OK }

    func remove(_ easy: CurlEasy) { curl_multi_remove_handle(handle, easy.handle) }

    /// Drives every transfer as far as it can go without blocking.
    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(handle, &running)
    }

    /// Waits for socket activity, a wake-up, or `timeoutMs`.
    func poll(timeoutMs: Int32) {
        var fds: Int32 = 0
        _ = curl_multi_poll(handle, nil, 0, timeoutMs, &fds)
    }

    /// Interrupts `poll` from any thread.
    func wakeup() { curl_multi_wakeup(handle) }

    /// The next finished transfer, if any.
    func nextDone() -> (UnsafeMutableRawPointer, CURLcode)? {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(handle, &queued) {
            if message.pointee.msg == CURLMSG_DONE, let easy = jg_msg_easy(message) {
                return (easy, jg_msg_result(message))
            }
        }
        return nil
    }
}
