extension HostSummary {
    /// The standings from best to worst: a merged origin keeps the worst any shard
    /// saw at its end, since one shard that found a host down is what an operator
    /// must hear of, whatever the others found.
    private static let standings = ["up", "cooling", "suspect", "down"]

    /// The `hosts` sections of several reports as one (`report merge`): per origin
    /// the requests, bytes, failures, 429/503 answers and seconds cooling of every
    /// attempt added up (each was sent, whichever attempt's items the merge keeps),
    /// and the worst final state among them; by origin.
    static func merged(_ sections: [[HostSummary]]) -> [HostSummary] {
        var byOrigin: [String: HostSummary] = [:]
        for summary in sections.joined() {
            guard var total = byOrigin[summary.origin] else {
                byOrigin[summary.origin] = summary
                continue
            }
            total.requests += summary.requests
            total.bytes += summary.bytes
            total.bytesReceived += summary.bytesReceived
            total.failures += summary.failures
            total.throttled += summary.throttled
            total.coolingS += summary.coolingS
            total.state = worse(total.state, summary.state)
            byOrigin[summary.origin] = total
        }
        return byOrigin.values.sorted { $0.origin < $1.origin }
    }

    /// The worse of two states; one this version does not know counts as worst, so
    /// a newer shard's state is never hidden behind `up`.
    private static func worse(_ a: String, _ b: String) -> String {
        let rank = { (state: String) in standings.firstIndex(of: state) ?? standings.count }
        return rank(b) > rank(a) ? b : a
    }
}
