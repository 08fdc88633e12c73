import JGMirror

/// How the simulated client shares the file over its connections. Every policy runs
/// the same `SegmentBook`; they differ in its region cap and in whether an idle
/// connection may steal.
public enum SchedulingPolicy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Regions of `min_segment` (1 MiB) from the front, one request each: the engine
    /// before issue 12 on a link where its pieces never grew.
    case piecePerRequest = "piece-per-request"
    /// Equal regions, one request each, no stealing: what `axel -n` does.
    case staticSplit = "static-split"
    /// Equal regions, one request each; an idle connection steals the back half of
    /// the largest region left.
    case regionPerConnection = "region-per-connection"
    /// As `regionPerConnection`, with regions capped at `SegmentBook.regionCap` (the
    /// size where a request's round trip and the hash tail after the last byte cost
    /// about the same): the engine's policy before it stole by finish time.
    case cappedRegions = "capped-regions"
    /// Equal regions, one request each; an idle connection steals from the region
    /// that will finish last at its owner's rate, cut so that all finish together, its
    /// own round trip counted, and only where the engine's politeness allows the cut
    /// (`SegmentBook.stealFinishingTogether`, `CrewPolicy.mayCut`): the engine's
    /// policy, which feeds it measured rates. Uncapped since issue 45: a capped region
    /// is a request more per cap, which upstreams count.
    case finishTogether = "finish-together"

    public var description: String { rawValue }

    /// The book's region cap for `scenario` under this policy.
    func regionCap(for scenario: LinkScenario) -> Int64? {
        switch self {
        case .piecePerRequest: scenario.minSegment
        case .staticSplit, .regionPerConnection, .finishTogether: nil
        case .cappedRegions:
            SimulatedSegmentBook.regionCap(
                length: scenario.size, connections: scenario.connections, roundTrip: scenario.roundTrip,
                hashRate: scenario.hashBytesPerSecond)
        }
    }

    /// How an idle connection takes work from another's region.
    enum Steal {
        /// It does not.
        case never
        /// The back half of the largest region (`SegmentBook.stealHalf(for:)`).
        case half
        /// From the region that finishes last, cut so both finish together.
        case finishTogether
    }

    var steal: Steal {
        switch self {
        case .staticSplit: .never
        case .piecePerRequest, .regionPerConnection, .cappedRegions: .half
        case .finishTogether: .finishTogether
        }
    }
}
