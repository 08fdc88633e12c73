extension Crew {
    /// The source a new connection of the item uses, among `live` sources
    /// (docs/hosts.md#sources-by-health): `SourceShare`'s choice by the run's host table — hosts
    /// that are not `up` skipped, the others weighed by the rates the run measured across items —
    /// or, when none of them is up, one by `slot` in turn, whose request the host table
    /// then holds or refuses.
    func source(forSlot slot: Int, among live: [Int]) -> Int {
        let engine = item.engine
        let now = engine.now()
        let candidates = live.map { source in
            let origin = Origin.key(item.remote.url(of: source))
            return SourceShare.Candidate(
                source: source, state: engine.loop.hosts.state(of: origin, now: now), rate: engine.loop.hosts.hosts[origin]?.rate)
        }
        var connections: [Int: Int] = [:]
        for worker in workers where worker.slot != slot { connections[worker.sourceIndex, default: 0] += 1 }
        return SourceShare.pick(candidates, connections: connections) ?? live[slot % live.count]
    }
}
