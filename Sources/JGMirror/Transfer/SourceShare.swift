/// Which of an item's sources a new connection uses (docs/hosts.md#sources-by-health: an item's
/// connections are spread over its URL and mirrors, weighted by the rates the run
/// measures; a host that is not `up` gets no new connection while another is).
/// Decided without curl or clocks from what the run's `HostTable` knows of each
/// source's host, so a dead or slow primary's share goes to the mirrors at once,
/// for every item, instead of each item learning it again.
enum SourceShare {
    /// One source as the host table sees it.
    struct Candidate: Equatable {
        /// Index into the item's sources.
        var source: Int
        /// Its host's standing now.
        var state: HostTable.State
        /// Bytes per second a connection to its host has delivered in this run
        /// (`HostTable.Host.rate`); nil before any request showed one.
        var rate: Double?
    }

    /// The source for the item's next connection among `candidates` (in the item's
    /// order, primary first), given how many of its connections each source carries
    /// now: the one furthest below its share, shares in proportion to the measured
    /// rates, ties to the earlier source. Only sources whose host is `up` count; nil
    /// when none is, and the caller's own choice goes to the host table, which holds
    /// or refuses it.
    ///
    /// A source not measured yet is weighed as the best measured one: it gets its
    /// turn, and shows its rate, before the run stops asking it. With nothing
    /// measured every source weighs the same, and the connections go round the
    /// sources in order, primary first, as they always did.
    static func pick(_ candidates: [Candidate], connections: [Int: Int]) -> Int? {
        let usable = candidates.filter { $0.state == .up }
        guard !usable.isEmpty else { return nil }
        let best = usable.compactMap(\.rate).max() ?? 1
        var chosen: (source: Int, load: Double)?
        for candidate in usable {
            // A host measured at nothing still weighs a little: with no other, it is used.
            let weight = max(candidate.rate ?? best, Self.slowest)
            let load = Double(connections[candidate.source, default: 0] + 1) / weight
            if chosen.map({ load < $0.load }) ?? true { chosen = (candidate.source, load) }
        }
        return chosen?.source
    }

    /// The least weight a source has, bytes per second: a host measured at 0 would
    /// otherwise divide by zero.
    static let slowest = 1.0
}
