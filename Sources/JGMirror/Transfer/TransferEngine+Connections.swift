import CCurl
import CLinux
import Dispatch
import Foundation
import Synchronization

/// Connections on the engine thread: the cap per host, and the curl handles workers
/// run on.
extension TransferEngine {
    /// Whether `host` carries fewer requests than `--max-per-host` now.
    func hasRoom(_ host: String) -> Bool { loop.hostLoad[host, default: 0] < configuration.maxPerHost }

    /// Takes a connection slot for `host`, or says none is free (`--max-per-host`).
    func acquireHost(_ host: String) -> Bool {
        let load = loop.hostLoad[host, default: 0]
        guard load < configuration.maxPerHost else { return false }
        loop.hostLoad[host] = load + 1
        return true
    }

    /// Whether an item may open more connections to `url`'s host before any has
    /// answered (regions cut from the manifest's size): plain HTTP only. libcurl (7.88)
    /// takes a host for one that cannot multiplex once any connection to it answers in
    /// HTTP/1.1, as the regions' would, and the small files that follow would then each
    /// open a connection instead of sharing one over HTTP/2.
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
