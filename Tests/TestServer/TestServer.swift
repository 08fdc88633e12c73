import Foundation
import Synchronization

/// An HTTP/1.1 origin on 127.0.0.1 with Range, If-Range, ETag and faults switched
/// per request, modelled on async-http-client's `HTTPBin`. One thread per
/// connection, keep-alive, no dependencies: the tests run it in-process on port 0,
/// the demo and the benchmarks run it as `jgmirror-origin`.
public final class TestServer: Sendable {
    /// A request as the server saw it.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [String: String]
        /// Which connection carried it.
        public var connection: Int
        /// When it arrived, monotonic seconds: the order of events around a server's
        /// `Retry-After`, never a duration to assert.
        public var at: Double
    }

    /// How the server answered a request.
    public struct Response: Sendable {
        public var path: String
        public var status: Int
        /// Body bytes written.
        public var bodyBytes: Int
    }

    private struct State {
        var routes: [String: Route] = [:]
        var counters: [String: Int] = [:]
        var requests: [Request] = []
        var responses: [Response] = []
        var connections = 0
        var clientFDs: Set<Int32> = []
        var stopped = false
        /// After accepting this connection (1-based), accept none for `seconds`.
        var acceptPause: (after: Int, seconds: Double)?
    }

    private let listener: Int32
    /// The port the kernel chose.
    public let port: Int
    private let state = Mutex(State())
    /// Broadcast as each request arrives, for `waitForRequests`.
    private let arrivals = NSCondition()

    /// Listens on 127.0.0.1 (port 0 picks a free port) and serves in the background.
    /// `backlog` is `listen`'s: the connections the kernel completes before they are
    /// accepted; past it, it drops new ones and their clients try again a second later.
    public init(port requested: Int = 0, backlog: Int32 = 512) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(requested).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            close(fd)
            throw ServerError("bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public func url(_ path: String) -> String { baseURL + path }

    /// Serves `route` at `path` (replacing any earlier route and its request counter).
    public func set(_ path: String, _ route: Route) {
        state.withLock {
            $0.routes[path] = route
            $0.counters[path] = 0
        }
    }

    /// Changes the route at `path` in place.
    public func update(_ path: String, _ change: (inout Route) -> Void) {
        state.withLock { state in
            if var route = state.routes[path] {
                change(&route)
                state.routes[path] = route
            }
        }
    }

    /// Requests received for `path` so far (every path when nil).
    public func requests(_ path: String? = nil) -> [Request] {
        state.withLock { state in state.requests.filter { path == nil || $0.path == path } }
    }

    /// Requests other than `HEAD` (which the client sends only to open connections)
    /// received for `path` so far (every path when nil): what it asked for the file.
    public func gets(_ path: String? = nil) -> [Request] {
        requests(path).filter { $0.method != "HEAD" }
    }

    /// Blocks until `condition` holds of the requests received so far, woken by each
    /// request as it arrives, for at most `timeout` seconds; whether it held. A test
    /// waits on the server's own events instead of polling on a clock.
    public func waitForRequests(timeout: Double, until condition: ([Request]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        arrivals.lock()
        defer { arrivals.unlock() }
        while !condition(requests()) {
            guard arrivals.wait(until: deadline) else { return condition(requests()) }
        }
        return true
    }

    /// Answers sent for `path` so far (every path when nil), in order.
    public func responses(_ path: String? = nil) -> [Response] {
        state.withLock { state in state.responses.filter { path == nil || $0.path == path } }
    }

    private func log(_ path: String, _ status: Int, _ bodyBytes: Int) {
        state.withLock { $0.responses.append(Response(path: path, status: status, bodyBytes: bodyBytes)) }
    }

    /// Accepts no connection for `seconds` once the `connection`th (1-based) is in: with
    /// a small `backlog`, the clients that come meanwhile wait in the kernel or retry
    /// their connect, as with a server whose workers are all busy. After it, the
    /// backlog is 512.
    public func pauseAccepting(after connection: Int, for seconds: Double) {
        state.withLock { $0.acceptPause = (connection, seconds) }
    }

    /// TCP connections accepted so far.
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// Stops listening and closes every connection.
    public func stop() {
        let fds = state.withLock { state -> Set<Int32>? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return state.clientFDs
        }
        guard let fds else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let (number, pause) = state.withLock { state -> (Int?, Double?) in
                guard !state.stopped else { return (nil, nil) }
                state.connections += 1
                state.clientFDs.insert(client)
                let pause = state.acceptPause.flatMap { $0.after == state.connections ? $0.seconds : nil }
                return (state.connections, pause)
            }
            guard let number else {
                close(client)
                return
            }
            let thread = Thread { [self] in
                serve(client, connection: number)
                state.withLock { _ = $0.clientFDs.remove(client) }
                close(client)
            }
            thread.stackSize = 256 * 1024
            thread.start()
            if let pause {
                Thread.sleep(forTimeInterval: pause)
                // Busy no more: the kernel holds as many waiting connections as usual.
                listen(listener, 512)
            }
        }
    }

    // MARK: HTTP

    private func serve(_ fd: Int32, connection: Int) {
        var buffer: [UInt8] = []
        /// What the previous answer on this connection left to send (`extraBytesLater`).
        var leftOver = 0
        while true {
            guard let (head, rest) = readHead(fd, buffer: buffer) else { return }
            buffer = rest
            let lines = head.components(separatedBy: "\r\n")
            let parts = lines[0].split(separator: " ")
            guard parts.count >= 2 else { return }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let path = String(parts[1].split(separator: "?", maxSplits: 1)[0])
            let request = Request(
                method: String(parts[0]), path: path, headers: headers, connection: connection,
                at: Double(DispatchTime.now().uptimeNanoseconds) / 1e9)
            let (route, index) = state.withLock { state -> (Route?, Int) in
                state.requests.append(request)
                // A HEAD (the client warming a connection) is not one of the path's
                // numbered requests and takes no fault.
                let index = state.counters[path, default: 0]
                if request.method != "HEAD" { state.counters[path] = index + 1 }
                return (state.routes[path], index)
            }
            arrivals.lock()
            arrivals.broadcast()
            arrivals.unlock()
            if leftOver > 0 {
                guard write(fd, [UInt8](repeating: 0x78, count: leftOver)) else { return }
                leftOver = 0
            }
            guard respond(fd, request: request, route: route, index: index) else { return }
            if request.method != "HEAD" { leftOver = route?.extraBytesLater ?? 0 }
            if headers["connection"]?.lowercased() == "close" { return }
        }
    }

    /// Answers one request; false when the connection must close.
    private func respond(_ fd: Int32, request: Request, route: Route?, index: Int) -> Bool {
        guard let route else { return send(fd, head: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n") }
        if let delay = route.headDelay { Thread.sleep(forTimeInterval: delay) }
        if !route.answeredOnceAsked.isEmpty {
            let asked = waitForRequests(timeout: 10) { requests in
                route.answeredOnceAsked.allSatisfy { path in requests.contains { $0.path == path } }
            }
            if !asked { return send(fd, head: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n") }
        }
        if request.method == "HEAD", let delay = route.extraHEADDelay { Thread.sleep(forTimeInterval: delay) }
        let askedStart = request.headers["range"].flatMap { Self.parseRange($0, total: route.body.count)?.0 }
        let fault = request.method == "HEAD" ? nil : route.faultAtStart.map { $0(askedStart ?? 0) } ?? route.fault(index)
        if case .raw(let bytes) = fault {
            _ = write(fd, bytes)
            return false
        }
        if case .silence(let seconds) = fault {
            Thread.sleep(forTimeInterval: seconds)
            return false
        }
        if case .status(let status, let retryAfter) = fault {
            var head = "HTTP/1.1 \(status) Fault\r\nContent-Length: 0\r\n"
            if let retryAfter { head += "Retry-After: \(retryAfter)\r\n" }
            return send(fd, head: head + "\r\n")
        }
        if case .statusWithHeaders(let status, let lines) = fault {
            let head = "HTTP/1.1 \(status) Fault\r\nContent-Length: 0\r\n" + lines.map { $0 + "\r\n" }.joined()
            return send(fd, head: head + "\r\n")
        }
        if let location = route.redirect {
            let isHEAD = request.method == "HEAD"
            return redirect(fd, to: location, status: route.redirectStatus, body: route.redirectBody, head: isHEAD)
        }
        if Self.notModified(request, route) {
            var head = "HTTP/1.1 304 Not Modified\r\n"
            if let etag = route.etag { head += "ETag: \(etag)\r\n" }
            log(request.path, 304, 0)
            return send(fd, head: head + "\r\n")
        }
        let total = route.body.count
        var validators = route.extraHeaders.map { $0 + "\r\n" }.joined()
        if let etag = route.etag { validators += "ETag: \(etag)\r\n" }
        if let lastModified = route.lastModified { validators += "Last-Modified: \(lastModified)\r\n" }
        if route.endless {
            guard send(fd, head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\(validators)\r\n") else { return false }
            let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
            let header = Array(String(chunk.count, radix: 16).utf8) + [13, 10]
            for _ in 0..<(16 * 1024) {
                guard write(fd, header + chunk + [13, 10]) else { return false }
            }
            return false
        }
        var start = 0
        var end = total
        var status = "200 OK"
        var rangeHeader = ""
        let refused =
            route.refuseDateIfRange && request.headers["if-range"] != nil && request.headers["if-range"] == route.lastModified
        let ignore = route.ignoreRange || fault == .ignoreRange || refused
        if let range = request.headers["range"], !ignore, Self.ifRangeMatches(request.headers["if-range"], route) {
            guard let (from, to) = Self.parseRange(range, total: total) else {
                return send(
                    fd, head: "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(total)\r\nContent-Length: 0\r\n\r\n"
                )
            }
            start = from
            end = fault == .toTheEnd ? total : to
            status = "206 Partial Content"
            rangeHeader = "Content-Range: bytes \(start)-\(end - 1)/\(total)\r\n"
        }
        var head = "HTTP/1.1 \(status)\r\n\(validators)\(rangeHeader)"
        if !route.ignoreRange { head += "Accept-Ranges: bytes\r\n" }
        if case .short(let bytes) = fault {
            let sent = min(bytes, end - start)
            guard send(fd, head: head + "Content-Length: \(sent)\r\n\r\n") else { return false }
            return write(fd, Array(route.body[start..<(start + sent)]))
        }
        if let announced = route.announcedLength {
            // The whole (claimed) file, whatever range was asked.
            let whole = "HTTP/1.1 200 OK\r\n\(validators)Accept-Ranges: bytes\r\nContent-Length: \(announced)\r\n\r\n"
            guard send(fd, head: whole), request.method != "HEAD" else { return false }
            _ = write(fd, route.body)
            return false
        }
        if route.noLength {
            head += "Connection: close\r\n\r\n"
        } else {
            head += "Content-Length: \(end - start)\r\n\r\n"
        }
        guard send(fd, head: head) else { return false }
        if request.method == "HEAD" { return !route.noLength }
        var body = Array(route.body[start..<end])
        if route.extraBytes > 0 { body += [UInt8](repeating: 0x78, count: route.extraBytes) }
        var limit = body.count
        var stallSeconds: Double?
        switch fault {
        case .drop(let after): limit = min(limit, after)
        case .stall(let after, let seconds):
            limit = min(limit, after)
            stallSeconds = seconds
        default: break
        }
        log(request.path, Int(status.prefix(3)) ?? 0, limit)
        var rate = route.bytesPerSecond
        if case .slow(let slow) = fault { rate = slow }
        if case .slowsDown(let after, let slow) = fault, after < limit {
            guard writeBody(fd, body[0..<after], bytesPerSecond: rate) else { return false }
            guard writeBody(fd, body[after..<limit], bytesPerSecond: slow) else { return false }
        } else if let interval = route.trickleInterval {
            for byte in body[0..<limit] {
                guard write(fd, [byte]) else { return false }
                Thread.sleep(forTimeInterval: interval)
            }
        } else {
            guard writeBody(fd, body[0..<limit], bytesPerSecond: rate) else { return false }
        }
        if let stallSeconds {
            Thread.sleep(forTimeInterval: stallSeconds)
            return false
        }
        if limit < body.count || route.noLength || route.extraBytes > 0 { return false }
        return true
    }

    /// Sends a redirect to `location` with the body asked for (none to a `HEAD`,
    /// whose answer has only the head); false when the connection must close.
    private func redirect(_ fd: Int32, to location: String, status: Int, body: RedirectBody, head isHEAD: Bool) -> Bool {
        let head = "HTTP/1.1 \(status) Moved\r\nLocation: \(location)\r\nContent-Type: text/html\r\n"
        switch body {
        case .none:
            return send(fd, head: head + "Content-Length: 0\r\n\r\n")
        case .sized(let count):
            return send(fd, head: head + "Content-Length: \(count)\r\n\r\n")
                && (isHEAD || write(fd, [UInt8](repeating: 0x3C, count: count)))
        case .chunked(let count):
            guard send(fd, head: head + "Transfer-Encoding: chunked\r\n\r\n") else { return false }
            if isHEAD { return true }
            var left = count
            while left > 0 {
                let size = min(left, 1024)
                let chunk = Array(String(size, radix: 16).utf8) + [13, 10] + [UInt8](repeating: 0x3E, count: size) + [13, 10]
                guard write(fd, chunk) else { return false }
                left -= size
            }
            return send(fd, head: "0\r\n\r\n")
        }
    }

    private func writeBody(_ fd: Int32, _ bytes: ArraySlice<UInt8>, bytesPerSecond: Int?) -> Bool {
        guard let rate = bytesPerSecond else { return write(fd, Array(bytes)) }
        let slice = max(1024, rate / 50)
        let begin = Date()
        var sent = 0
        while sent < bytes.count {
            let next = min(bytes.count, sent + slice)
            guard write(fd, Array(bytes[(bytes.startIndex + sent)..<(bytes.startIndex + next)])) else { return false }
            sent = next
            let due = Double(sent) / Double(rate) - Date().timeIntervalSince(begin)
            if due > 0 { Thread.sleep(forTimeInterval: due) }
        }
        return true
    }

    /// A GET whose `If-None-Match` names the route's ETag, or (without one) whose
    /// `If-Modified-Since` is no earlier than its Last-Modified (RFC 9110 §13.1.2-3).
    static func notModified(_ request: Request, _ route: Route) -> Bool {
        if let tags = request.headers["if-none-match"] {
            guard let etag = route.etag else { return false }
            return tags.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == etag || $0 == "*" }
        }
        guard let since = request.headers["if-modified-since"], let lastModified = route.lastModified,
            let sinceDate = httpDate(since), let modified = httpDate(lastModified)
        else { return false }
        return modified <= sinceDate
    }

    private static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }

    static func ifRangeMatches(_ value: String?, _ route: Route) -> Bool {
        guard let value else { return true }
        return value == route.etag || value == route.lastModified
    }

    /// `bytes=a-b` or `bytes=a-` → half-open bounds, clamped; nil when unsatisfiable.
    static func parseRange(_ header: String, total: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes=") else { return (0, total) }
        let spec = header.dropFirst(6).split(separator: ",")[0]
        let bounds = spec.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let from = Int(bounds[0]) else { return (0, total) }
        let to = bounds[1].isEmpty ? total : min(total, (Int(bounds[1]) ?? total - 1) + 1)
        guard from < total, from < to else { return nil }
        return (from, to)
    }

    private func readHead(_ fd: Int32, buffer: [UInt8]) -> (String, [UInt8])? {
        var data = buffer
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            if let end = Self.headEnd(data) {
                return (String(decoding: data[0..<end], as: UTF8.self), Array(data[(end + 4)...]))
            }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return nil }
            data += chunk[0..<count]
            if data.count > 1 << 20 { return nil }
        }
    }

    private static func headEnd(_ data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for i in 0...(data.count - 4) where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func send(_ fd: Int32, head: String) -> Bool { write(fd, Array(head.utf8)) }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 {
                if count < 0, errno == EINTR { continue }
                return false
            }
            sent += count
        }
        return true
    }

    /// Deterministic pseudo-random bytes: the same `seed` gives the same file everywhere.
    public static func bytes(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            let words = count / 8
            let pointer = raw.baseAddress!
            for i in 0..<words {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                pointer.storeBytes(of: state, toByteOffset: i * 8, as: UInt64.self)
            }
            for i in (words * 8)..<count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                raw[i] = UInt8(truncatingIfNeeded: state)
            }
        }
        return out
    }
}

/// The server could not start.
public struct ServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
