import CCurl
import CLinux
import Dispatch
import Foundation
import Synchronization

/// Connections on the engine thread: the cap per host, warm-ups that open a
/// connection before a request needs it, and the curl handles workers run on.
extension TransferEngine {
    /// Whether `host` carries fewer requests than `--max-per-host` now.
    func hasRoom(_ host: String) -> Bool { loop.hostLoad[host, default: 0] < configuration.maxPerHost }

    /// Takes a connection slot for `host`, or says none is free (`--max-per-host`).
    /// Until `warmUntil`, a request waits for a warm-up under way to that host rather
    /// than open a connection of its own (the warm-up's answer is due about when the
    /// item's first head came); one answered hands its connection to the next request.
    func acquireHost(_ host: String, warmUntil: Double = 0) -> Bool {
        let load = loop.hostLoad[host, default: 0]
        guard load < configuration.maxPerHost else { return false }
        if let warm = loop.warming[host] {
            if warm.idle > 0 {
                loop.value.warming[host]?.idle -= 1
            } else if warm.underWay > 0, now() < warmUntil {
                return false
            }
            if loop.warming[host]?.underWay == 0, loop.warming[host]?.idle == 0 { loop.warming[host] = nil }
        }
        loop.hostLoad[host] = load + 1
        loop.hostPeak[host] = max(loop.hostPeak[host] ?? 0, load + 1)
        return true
    }

    /// Asks for `url`'s host to carry `connections` connections before an item fans
    /// out: while the item's first request learns the file's length, `HEAD` requests
    /// open the connections its regions will use, so each region's request costs one
    /// round trip instead of two (a handshake, then the request). Only the connections
    /// the host has not carried yet in this run are opened, and none past
    /// `--max-per-host`; a burst of items that fills the host needs none. Sent after the
    /// loop's pass admits its items, so they count.
    ///
    /// Plain HTTP only: libcurl (7.88) takes a host for one that cannot multiplex once
    /// any connection to it answers in HTTP/1.1, as the warm-ups would, and the small
    /// files that follow would then each open a connection instead of sharing one over
    /// HTTP/2.
    func warmUp(_ url: String, connections: Int, for request: TransferRequest) {
        guard Self.mayOpenAhead(url) else { return }
        loop.pendingWarmUps.append((url, connections, request))
    }

    /// Whether an item may open more connections to `url`'s host before any has
    /// answered (warm-ups, regions cut from the manifest's size): plain HTTP only, for
    /// the reason `warmUp` gives.
    static func mayOpenAhead(_ url: String) -> Bool { !url.hasPrefix(asciiCaseInsensitive: "https:") }

    /// Whether an item may send every region's request to `url` before an answer
    /// (the manifest gives the size): it may open connections ahead, and its host
    /// has not answered such a request with the whole file or a redirect in this run,
    /// so a server that ignores ranges, or a mirror director, costs the extra requests
    /// once, not on every file.
    func mayCutAhead(_ url: String) -> Bool {
        Self.mayOpenAhead(url) && !loop.hostsAskedFirst.contains(Origin.key(url))
    }

    /// Notes that `url`'s host answered a request for one region with the whole file
    /// or a redirect: its later items ask once before they fan out.
    func mustAskFirst(_ url: String) { loop.hostsAskedFirst.insert(Origin.key(url)) }

    func sendWarmUps() {
        let time = now()
        for (url, connections, request) in loop.pendingWarmUps {
            let host = Origin.key(url)
            // A host that is cooling, suspect or down gets no request the table did not allow.
            guard loop.hosts.state(of: host, now: time) == .up else { continue }
            let wanted = min(connections, configuration.maxPerHost)
            let known = max(loop.hostPeak[host] ?? 0, loop.hostLoad[host] ?? 0)
            guard wanted > known else { continue }
            loop.hostPeak[host] = wanted
            for _ in known..<wanted {
                // A warm-up that cannot be made costs the item a round trip, nothing more.
                guard
                    let easy = try? takeHandle(setUp: { easy throws(TransferError) in
                        try RequestBuilder.setUpWarmUp(easy, url: url, request: request, configuration: configuration)
                    }),
                    multi.add(easy)
                else { break }
                loop.warmUps[easy.handle] = (easy, host)
                loop.warming[host, default: (0, 0)].underWay += 1
            }
        }
        loop.pendingWarmUps.removeAll()
    }

    func releaseHost(_ host: String) {
        if let load = loop.hostLoad[host] { loop.hostLoad[host] = load > 1 ? load - 1 : nil }
    }

    func attach(_ worker: Worker) throws(TransferError) {
        guard let easy = worker.easy, multi.add(easy) else {
            throw TransferError(code: .curl, message: "libcurl refused a transfer handle")
        }
        loop.workersByHandle[easy.handle] = worker
    }

    /// Removes a worker's request from the multi handle, frees its host slot and keeps
    /// its handle for a later request; the worker has none after this.
    func detach(_ worker: Worker) {
        noteEnd(of: worker, code: nil)
        guard let easy = worker.easy else { return }
        worker.easy = nil
        multi.remove(easy)
        loop.workersByHandle[easy.handle] = nil
        releaseHost(worker.host)
        loop.ratePaused.removeAll { $0 === worker }
        recycle(easy)
    }

    /// Keeps a handle no longer in the multi handle for a later request. One that
    /// spoke HTTP/2 is kept too: requests that may speak HTTP/2 leave
    /// `CURLOPT_BUFFERSIZE` alone (`RequestBuilder`), the option libcurl refuses on it
    /// (1886 of 2000 such reuses failed while they set it); another request that gets
    /// it falls back to a new handle (`takeHandle`).
    func recycle(_ easy: CurlEasy) {
        guard loop.spareHandles.count < Self.spareHandleLimit, (try? easy.reset()) != nil else { return }
        loop.spareHandles.append(easy)
    }

    /// A handle set up for a request: a reset one kept from an earlier request, or a
    /// new one. libcurl refuses some options on a reused handle (7.88 keeps an HTTP/2
    /// stream's receive buffer past `curl_easy_reset`, and then refuses
    /// `CURLOPT_BUFFERSIZE`); such a handle is dropped and a new one set up.
    func takeHandle(setUp: (CurlEasy) throws(TransferError) -> Void) throws(TransferError) -> CurlEasy {
        while let easy = loop.spareHandles.popLast() {
            if (try? setUp(easy)) != nil { return easy }
        }
        let easy = try CurlEasy()
        try setUp(easy)
        return easy
    }
}
