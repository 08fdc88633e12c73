import CCurl
import CLinux
import DequeModule
import Dispatch
import Foundation
import Synchronization

/// Drives every transfer of a run through one libcurl multi handle on one thread
/// (docs/engine.md).
///
/// Other threads talk to it only through `inbox` (a mutex-guarded command list) and
/// `curl_multi_wakeup`; every curl handle, item and worker belongs to the engine
/// thread. Outcomes and events are delivered on that thread and must return quickly.
///
/// `@unchecked Sendable`: what other threads call goes through `inbox` (a `Mutex`) and
/// atomics; what the loop owns (`loop`) and the items' connections are `EngineBound`
/// to `engineThread`, checked on every access in debug builds.
final class TransferEngine: @unchecked Sendable {
    /// Run-wide limits and settings: what a caller chooses (`settings`, read here by
    /// name: `configuration.jobs`) and what the library and its tests tune.
    @dynamicMemberLookup
    struct Configuration: Sendable {
        /// Jobs, connections per host, rate, CA, retry delay, durability, …
        var settings = TransferSettings()

        subscript<Value>(dynamicMember path: WritableKeyPath<TransferSettings, Value>) -> Value {
            get { settings[keyPath: path] }
            set { settings[keyPath: path] = newValue }
        }

        /// Longest retry delay.
        var retryMaxDelay = 30.0
        /// Bytes written to a part file after which its data is synced while the rest
        /// arrives (durable runs): writeback then keeps pace with the download instead
        /// of starting at the first checkpoint and leaving most of it to the end.
        /// 1 GiB durable, 4 connections, loopback: 2.95 s without, 2.08 s at 64 MiB
        /// (2.44 s at 32 MiB, 2.20 s at 128 MiB; medians of 5).
        var flushStep: Int64 = 64 << 20
        /// `fdatasync`; tests inject failures.
        var dataSync: @Sendable (Int32) -> Int32 = { fdatasync($0) }
        /// Bytes written to a part file after which the disk is asked to start writing
        /// them back (durable runs), and once more when the download completes, without
        /// waiting: the final `fdatasync` then finds little dirty. 48 MiB over a link
        /// of 32 MB/s otherwise leaves the whole file to one sync after the last byte.
        var writebackStep: Int64 = 4 << 20
        /// Starts writeback of a file's dirty pages (`sync_file_range`); tests count calls.
        var startWriteback: @Sendable (Int32) -> Int32 = { jg_start_writeback($0) }
        /// Asks a file system for its free space; tests inject a small disk.
        var freeSpace: SpaceGuard.Probe = SpaceGuard.systemProbe
        /// What the bodies of unknown length in flight may still write, shared by all
        /// of this engine's items (`SpaceGuard.Ledger`).
        var spaceLedger = SpaceGuard.Ledger()
        /// How the run judges its hosts (docs/hosts.md): grace, longest wait, probes.
        var hosts = HostTable.Settings()
        /// Seconds a connection may take to open, TLS included (`connect_timeout`).
        var connectTimeout = Rules.connectTimeout.defaultValue
        /// Bytes per second under which a request, for its `timeout`, is stalled
        /// (`min_rate`): a server that sends a byte now and then is cut, not waited on.
        var minRate = Rules.minRate.defaultValue
        /// The run's `--max-duration`, with the deadline it fixed: the lists' engine
        /// is stopped at it as the session stops the items' (`ListFetcher`).
        var runDeadline: (deadline: RunDeadline, at: UInt64)?
        /// Whether the loop starts on a thread of its own. Tests that drive an item's
        /// crew by hand set it false and call `engineThread.enter()`: their thread
        /// plays the engine thread.
        var startsLoop = true
    }

    /// Commands from other threads.
    private struct Inbox {
        var submissions: [(TransferRequest, @Sendable (TransferOutcome) -> Void)] = []
        var cancel: Bool?
        var skipQueued = false
        var shutdown = false
        /// Items back from the preparation queue with what it found, ready to start.
        var prepared: [(ItemTransfer, ItemPreparation)] = []
        /// Outcomes whose item's disk work is done (`deliver(after:)`).
        var deliveries: [@Sendable () -> Void] = []
    }

    let configuration: Configuration
    private let onEvent: @Sendable (TransferEvent) -> Void
    private let inbox = Mutex(Inbox())
    /// Set by the first command since the loop last read the inbox, so a burst of
    /// commands costs one `curl_multi_wakeup`, not one each.
    private let wakePending = Atomic<Bool>(false)
    let multi: CurlMulti
    /// The most items the engine held at once (queued, being prepared or running):
    /// what a large run costs in transfer objects depends on how its caller feeds it.
    let mostHeld = Atomic<Int>(0)
    /// The loop's thread, which `EngineBound` state checks it is on.
    let engineThread = EngineThread()

    /// What the loop owns: its items, connections, hosts and budget. Touched only on
    /// the engine thread, which debug builds check on every access.
    var loop: EngineBound<EngineLoop>
    /// The table as it stood when an item last ended, with the engine's time then:
    /// what other threads read (`hostSnapshot`) once the items are done.
    private let publishedHosts = Mutex((table: HostTable(), now: 0.0))
    /// Finished requests' handles kept for reuse: about one per request in flight.
    static let spareHandleLimit = 64
    /// Opens part files (and takes over earlier runs' files) ahead of the items' turns,
    /// off this thread: creating a file was a sixth of this thread's time on ext4
    /// with many small items. Serial: creating many files at once in one folder
    /// contends on the folder's lock and was slower than one after another.
    private let preparation = DispatchQueue(label: "jgmirror.prepare")

    init(configuration: Configuration, onEvent: @escaping @Sendable (TransferEvent) -> Void) throws(TransferError) {
        self.configuration = configuration
        self.onEvent = onEvent
        var loop = EngineLoop(hosts: HostTable(settings: configuration.hosts))
        if let rate = configuration.maxRate { loop.limiter = RateLimiter(bytesPerSecond: rate, now: 0) }
        self.loop = EngineBound(loop, on: engineThread)
        multi = try CurlMulti(
            maxPerHost: configuration.maxPerHost, maxConnections: max(64, configuration.maxPerHost * 4))
        let thread = Thread { [self] in self.run() }
        thread.name = "jgmirror-engine"
        if configuration.startsLoop { thread.start() }
    }

    // MARK: Commands (any thread)

    /// Queues a file; `completion` runs on the engine thread when it ends.
    func submit(_ request: TransferRequest, completion: @escaping @Sendable (TransferOutcome) -> Void) {
        inbox.withLock { $0.submissions.append((request, completion)) }
        wake()
    }

    /// Stops every transfer; resume state is kept unless `clearing`.
    func cancel(clearing: Bool) {
        inbox.withLock { $0.cancel = clearing || ($0.cancel ?? false) }
        wake()
    }

    /// Reports items not yet started as skipped and starts no more (`--fail-fast`).
    func skipQueued() {
        inbox.withLock { $0.skipQueued = true }
        wake()
    }

    /// Lets the thread end once nothing is left; submissions after this are not taken.
    func shutdown() {
        inbox.withLock { $0.shutdown = true }
        wake()
    }

    /// Interrupts the loop's poll unless a wake-up is already on its way.
    private func wake() {
        if !wakePending.exchange(true, ordering: .sequentiallyConsistent) { multi.wakeup() }
    }

    // MARK: Event loop

    /// The loop: each pass carries out the inbox's commands, starts what has a slot,
    /// lets libcurl move the bytes, handles the requests that ended, then waits in
    /// libcurl's poll for a socket, a wake-up or the next deadline.
    private func run() {
        engineThread.enter()
        if loop.limiter != nil { loop.limiter = RateLimiter(bytesPerSecond: configuration.maxRate ?? 1, now: now()) }
        while true {
            wakePending.store(false, ordering: .sequentiallyConsistent)
            let commands = inbox.withLock { box -> Inbox in
                let taken = box
                box = Inbox(shutdown: box.shutdown)
                return taken
            }
            carryOut(commands)
            while loop.running.count < configuration.jobs, let item = loop.ready.popFirst() { admit(item) }
            prepareAhead()
            let time = now()
            refillRate(now: time)
            for item in loop.running { item.tick(now: time) }
            multi.perform()
            handleEndedRequests()
            for item in loop.running { item.settle() }
            withdrawUnsent()
            loop.running.removeAll { $0.finished }
            // A finished item's slot goes to the next one now, not after a poll.
            if loop.running.count < configuration.jobs, !loop.ready.isEmpty { continue }
            guard waitForWork(since: time) else { break }
        }
    }

    /// Carries out what other threads asked since the last pass: outcomes whose disk
    /// work is done, new items, a skip or a cancel, items back from preparation.
    private func carryOut(_ commands: Inbox) {
        for delivery in commands.deliveries {
            loop.undelivered -= 1
            delivery()
        }
        for (request, completion) in commands.submissions {
            // The host table is published before each outcome leaves the engine thread,
            // so whoever collects the last one reads a table that counts it.
            let item = ItemTransfer(engine: self, request: request) { [self] outcome in
                publishedHosts.withLock { $0 = (loop.hosts, now()) }
                completion(outcome)
            }
            if loop.cancelled || loop.skipping { item.skip(cancelled: loop.cancelled) } else { loop.waiting.append(item) }
        }
        let held = loop.waiting.count + loop.ready.count + loop.running.count + loop.preparing
        if held > mostHeld.load(ordering: .relaxed) { mostHeld.store(held, ordering: .relaxed) }
        if commands.skipQueued { skipWaiting() }
        if let clearing = commands.cancel {
            loop.cancelled = true
            loop.cancelClearing = clearing
            while let item = loop.waiting.popFirst() { item.skip(cancelled: true) }
            while let item = loop.ready.popFirst() { item.cancel(clearing: clearing) }
            for item in loop.running { item.cancel(clearing: clearing) }
        }
        for (item, preparation) in commands.prepared {
            loop.preparing -= 1
            item.adopt(preparation)
            if loop.cancelled {
                item.cancel(clearing: loop.cancelClearing)
            } else if loop.skipping {
                item.skip()
            } else {
                loop.ready.append(item)
            }
        }
    }

    /// Hands waiting items to the preparation queue: up to `jobs` items (at most 16)
    /// are prepared ahead of a free slot, so that a finished item's slot goes to one
    /// whose part file is already open; the cap keeps a large `--jobs` from doubling the
    /// descriptors held open. One with nothing to prepare is ready at once.
    private func prepareAhead() {
        while loop.running.count + loop.ready.count + loop.preparing < configuration.jobs + min(configuration.jobs, 16),
            let item = loop.waiting.popFirst()
        {
            guard item.needsPreparation else {
                loop.ready.append(item)
                continue
            }
            loop.preparing += 1
            // The item crosses to the queue and back only to be handed back: the queue
            // reads its immutable request, never its state (`ItemPreparation`).
            let request = item.request
            preparation.async { [self] in
                let prepared = ItemPreparation(request)
                inbox.withLock { $0.prepared.append((item, prepared)) }
                wake()
            }
        }
    }

    /// Refills `--max-rate`'s budget and lets the requests it paused go on once it
    /// holds bytes again.
    private func refillRate(now time: Double) {
        guard var limiter = loop.limiter else { return }
        limiter.refill(now: time)
        loop.limiter = limiter
        guard !limiter.isEmpty, !loop.ratePaused.isEmpty else { return }
        let resumed = loop.ratePaused
        loop.ratePaused.removeAll()
        for worker in resumed where worker.easy != nil {
            worker.ratePaused = false
            resume(worker)
        }
    }

    /// Hands each request libcurl finished to its item.
    private func handleEndedRequests() {
        while let (handle, code) = multi.nextDone() {
            loop.workersByHandle[handle]?.item.requestFinished(loop.workersByHandle[handle]!, code: code)
        }
    }

    /// Waits in libcurl's poll until a socket is ready, a command wakes the loop or
    /// the soonest item deadline (a retry, a checkpoint, progress) comes; false when
    /// nothing is left and the engine was shut down, which ends the loop.
    private func waitForWork(since time: Double) -> Bool {
        if loop.running.isEmpty, loop.waiting.isEmpty, loop.ready.isEmpty, loop.preparing == 0 {
            if loop.undelivered == 0, inbox.withLock({ $0.shutdown && $0.submissions.isEmpty }) { return false }
            multi.poll(timeoutMs: 500)
            return true
        }
        var deadline = time + 0.5
        for item in loop.running { deadline = min(deadline, item.nextDeadline(now: time)) }
        if !loop.ratePaused.isEmpty { deadline = min(deadline, time + 0.02) }
        multi.poll(timeoutMs: Int32(max(1, min(500, (deadline - now()) * 1000))))
        return true
    }

    /// Runs `delivery` (an ended item's outcome) on this thread once everything queued
    /// on `queue` (its last checkpoint, or the removal of its files) is done, so this
    /// thread never waits on the disk for it; the run ends only after.
    func deliver(after queue: DispatchQueue, _ delivery: @escaping @Sendable () -> Void) {
        loop.undelivered += 1
        queue.async { [self] in
            inbox.withLock { $0.deliveries.append(delivery) }
            wake()
        }
    }

    /// A prepared item joins `running` and sends its first request.
    private func admit(_ item: ItemTransfer) {
        loop.running.append(item)
        item.start()
    }

    // MARK: Services for items (engine thread)

    /// An item failed: under `--fail-fast` no queued item starts. Decided here, before
    /// the next item could take the freed slot.
    func itemFailed() {
        if configuration.failFast { skipWaiting() }
    }

    /// Reports every queued item as skipped and takes no more.
    private func skipWaiting() {
        loop.skipping = true
        while let item = loop.waiting.popFirst() { item.skip() }
        while let item = loop.ready.popFirst() { item.skip() }
    }

    /// The run's host table as it stood when the last item ended (any thread).
    func hostSnapshot() -> (table: HostTable, now: Double) { publishedHosts.withLock { $0 } }

    /// Monotonic seconds.
    func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    func emit(_ event: TransferEvent) { onEvent(event) }

    /// Unpauses a request paused by its write callback.
    func resume(_ worker: Worker) {
        guard let easy = worker.easy else { return }
        curl_easy_pause(easy.handle, jg_pause_cont())
    }

    var rateLimited: Bool { loop.limiter != nil }

    /// When the bandwidth budget is spent, records the worker as paused and says so.
    func takeRatePause(_ worker: Worker) -> Bool {
        guard let limiter = loop.limiter, limiter.isEmpty else { return false }
        worker.ratePaused = true
        loop.ratePaused.append(worker)
        return true
    }

    func consumeRate(_ bytes: Int) { loop.value.limiter?.take(bytes) }

    /// Exponential backoff with jitter; a server's `Retry-After` wins (capped).
    func backoff(attempt: Int, hint: Double?) -> Double {
        if let hint { return min(hint, configuration.retryMaxDelay) }
        let exponential = configuration.retryBaseDelay * pow(2, Double(max(0, attempt - 1)))
        return min(configuration.retryMaxDelay, exponential) * Double.random(in: 0.5...1.5)
    }
}
