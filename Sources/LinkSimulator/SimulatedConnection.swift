/// One TCP connection in the simulation.
struct SimulatedConnection {
    enum Phase: Equatable {
        /// Holds no work (not started, or nothing was left to take).
        case idle
        /// A request is on its way; its first byte arrives at this time.
        case requested(firstByte: Double)
        /// Bytes are arriving at `rate`.
        case streaming
        /// It stopped delivering at this time (a stall).
        case stalled(since: Double)
    }

    /// Bytes per second.
    var rate: Double
    var phase: Phase = .idle
    /// Exact position in the file (fractional between events).
    var position: Double = 0
    /// Where its request ends: past the region's end when the request was open-ended
    /// or a steal cut the region, in which case the connection must close at the cut.
    var requestEnd: Int64 = 0
    /// An open TCP connection that can carry the next request.
    var open = false

    // What the engine measures of it (`CrewPolicy.Connection`):
    /// When its request left, and when that request's first byte arrived.
    var sentAt = 0.0
    var firstByteAt: Double?
    /// Where its request began.
    var requestStart = 0.0
    /// The rate its previous request showed.
    var previousRate: Double?
}
