import CCurl
import Foundation

/// The engine's side of the run's `HostTable` (docs/hosts.md): it asks before each
/// request, tells the table what each request showed of its host, and wakes the
/// requests that waited for a host once it answers. The table decides.
extension TransferEngine {
    /// The error an item fails with when its host refuses its requests; the same
    /// text for every item of the host, so the terminal shows one line for it.
    func hostError(_ refusal: HostTable.Refusal, origin: String) -> TransferError {
        switch refusal {
        case .down:
            return TransferError(
                code: .hostDown,
                message: "\(origin) is down: no answer for \(Rules.formatDuration(loop.hosts.settings.grace(for: origin)))")
        case .rateLimited(let until):
            let wait = max(0, until - now())
            let limit =
                loop.hosts.settings.deadline.map { until > $0 } == true
                ? "past the run's deadline"
                : "longer than max_wait (\(Rules.formatDuration(loop.hosts.settings.maxWait(for: origin))))"
            return TransferError(
                code: .rateLimited, message: "\(origin) asks to wait \(Int(wait.rounded(.up)))s, \(limit)")
        }
    }

    /// A response head of `worker`'s request arrived: its host is there. A 429 or 503
    /// that says how long to wait cools the whole host.
    func noteAnswer(of worker: Worker) {
        guard let origin = worker.origin, !worker.answered else { return }
        worker.answered = true
        worker.probe = false
        let time = now()
        if loop.hosts.answered(origin, roundTrip: time - worker.sentAt) { wakeHeld(for: origin) }
        let head = worker.head
        if head.status == 429 || head.status == 503 {
            let wait = ThrottleHint.wait(
                retryAfter: head.retryAfterText, rateLimitReset: head.rateLimitReset,
                wallClock: Date().timeIntervalSince1970)
            loop.hosts.throttled(origin, now: time, wait: wait)
            if let wait, wait > 0 { loop.throttledNow.insert(origin) }
        }
    }

    /// Withdraws the requests to origins that asked to be left alone in this pass of
    /// the loop and have not left yet (still connecting, or queued in libcurl): they go
    /// back to wait for the host without spending a retry, so no
    /// request reaches it before the time it named (docs/hosts.md#rate-limits). Called
    /// outside libcurl's callbacks, which may not remove handles.
    func withdrawUnsent() {
        guard !loop.throttledNow.isEmpty else { return }
        let origins = loop.throttledNow
        loop.throttledNow.removeAll()
        for item in loop.running {
            for worker in item.crew.workers {
                guard let origin = worker.origin, origins.contains(origin), let easy = worker.easy, !worker.headProcessed,
                    worker.head.status == 0, !easy.requestSent
                else { continue }
                detach(worker)
                worker.state = .backoff(until: 0)
            }
        }
    }

    /// `worker`'s request ended with `code` (nil: stopped by the engine): a request
    /// that got no answer counts against its host; a probe that ended either way lets
    /// the requests waiting for the host look again.
    func noteEnd(of worker: Worker, code: CURLcode?) {
        guard let origin = worker.origin else { return }
        // A head that ended without a body, or before it: the host answered all the same.
        if code != nil, worker.head.status != 0 { noteAnswer(of: worker) }
        worker.origin = nil
        // Under `--max-rate` the engine paces every request itself: no host shows its rate.
        let seconds = rateLimited ? nil : worker.firstByteAt.map { now() - $0 }
        loop.hosts.received(origin, bytes: worker.requestBytes, of: worker.requestReceived, over: seconds)
        let probe = worker.probe
        worker.probe = false
        if worker.answered { return }
        if let code, Self.getsNoAnswer(code) {
            loop.hosts.failed(origin, now: now(), probe: probe)
        } else if probe {
            loop.hosts.released(origin)
        }
        if probe { wakeHeld(for: origin) }
    }

    /// libcurl codes that mean the host did not answer: no connection, no name, no
    /// byte in time, or a connection closed before a response.
    private static func getsNoAnswer(_ code: CURLcode) -> Bool {
        code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_OPERATION_TIMEDOUT
            || code == CURLE_GOT_NOTHING || code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR
    }

    /// Requests waiting for `origin` ask the table again now.
    private func wakeHeld(for origin: String) {
        for item in loop.running {
            for worker in item.crew.workers where worker.heldFor == origin {
                if case .backoff = worker.state { worker.state = .backoff(until: 0) }
            }
        }
    }
}

extension TransferEngine.Configuration {
    /// The manifest's host options over these settings: `defaults` for the run,
    /// `origins` (`hosts:`) for one origin each.
    mutating func apply(_ options: HostOptions, origins: [String: HostOptions] = [:]) {
        if let value = options.connectTimeout { connectTimeout = value }
        if let value = options.minRate { minRate = value }
        if let value = options.hostGrace { hosts.grace = value }
        if let value = options.maxWait { hosts.maxWait = value }
        hosts.origins = origins
    }

    /// `connectTimeout` for a request to `url`: its origin's own (`hosts:`), else the run's.
    func connectTimeout(for url: String) -> Double { options(for: url)?.connectTimeout ?? connectTimeout }

    /// `minRate` for a request to `url`: its origin's own (`hosts:`), else the run's.
    func minRate(for url: String) -> Int64 { options(for: url)?.minRate ?? minRate }

    /// Bytes per second under which a request to `url`, for its `timeout`, is cut.
    /// Under `--max-rate` the engine pauses requests itself; a floor on their rate
    /// would cut the ones it paused, so only silence counts then.
    func rateFloor(for url: String) -> Int64 { self.maxRate == nil ? minRate(for: url) : 1 }

    /// The options given for `url`'s origin; nil, without parsing the URL, when none are.
    private func options(for url: String) -> HostOptions? {
        hosts.origins.isEmpty ? nil : hosts.origins[Origin.key(url)]
    }
}
