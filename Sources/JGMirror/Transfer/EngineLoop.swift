import DequeModule

/// What a `TransferEngine`'s loop owns, held `EngineBound` to its thread: the items
/// at each stage, the connections and their hosts, the bandwidth budget.
struct EngineLoop {
    /// Submitted items not yet handed to preparation.
    var waiting = Deque<ItemTransfer>()
    /// Items whose part file is open, waiting for a slot.
    var ready = Deque<ItemTransfer>()
    /// Items with a slot, sending requests.
    var running: [ItemTransfer] = []
    /// Items handed to the preparation queue and not yet back.
    var preparing = 0
    /// Outcomes waiting for their item's disk work (`deliver(after:)`).
    var undelivered = 0
    var cancelled = false
    var cancelClearing = false
    /// `--fail-fast` after a failure: queued items are skipped.
    var skipping = false
    /// Every origin this engine's requests went to, and what they showed (docs/hosts.md).
    var hosts: HostTable
    var workersByHandle: [UnsafeMutableRawPointer: Worker] = [:]
    /// Handles of finished requests, reset for later ones (`detach`, `takeHandle`).
    var spareHandles: [CurlEasy] = []
    /// Requests under way per host.
    var hostLoad: [String: Int] = [:]
    /// Hosts that answered a region's request with the whole file or a redirect in
    /// this run: later items there do not cut regions before an answer (`mayCutAhead`).
    var hostsAskedFirst = Set<String>()
    /// Origins that asked to be left alone (429 or 503 with a time) in this pass of the
    /// loop: their requests not yet sent are withdrawn once the pass's callbacks are over.
    var throttledNow = Set<String>()
    /// `--max-rate`'s budget, and the requests paused until it refills.
    var limiter: RateLimiter?
    var ratePaused: [Worker] = []

    init(hosts: HostTable) { self.hosts = hosts }
}
