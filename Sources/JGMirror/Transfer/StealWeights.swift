/// What a steal weighs about an item's connections at one moment (SPEC §5), as
/// `SegmentBook.stealFinishingTogether` takes it, keyed by slot.
struct StealWeights {
    /// Bytes per second each connection delivers now (see `Worker.rate`).
    var rates: [Int: Double] = [:]
    /// Seconds until the first byte of a request still waiting for one, at the
    /// shortest round trip seen.
    var startsIn: [Int: Double] = [:]

    /// Weighs `workers` at `now`: a connection without a byte for `stallAfter`
    /// seconds counts as stalled (rate 0).
    init(_ workers: [Worker], now: Double, stallAfter: Double, roundTrip: Double) {
        for worker in workers {
            rates[worker.slot] = worker.rate(now: now, stallAfter: stallAfter)
            if worker.easy != nil, worker.firstByteAt == nil { startsIn[worker.slot] = max(0, worker.sentAt + roundTrip - now) }
        }
    }
}
