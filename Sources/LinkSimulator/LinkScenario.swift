import JGMirror

/// One simulated download: a file, the link each connection gets, and the client's
/// hashing speed.
///
/// Each TCP connection is capped at `bytesPerSecond` (a long path caps one flow) and
/// every request costs it a round trip before its first byte; a new connection costs
/// one more (the handshake). Nothing is lost or reordered and the rate holds from the
/// first byte (no slow start).
public struct LinkScenario: Sendable, Hashable, CustomStringConvertible {
    /// A connection that stops delivering, then is given up on.
    public struct Stall: Sendable, Hashable {
        /// Which connection (0 is the one that sent the first request).
        public var connection: Int
        /// Seconds after the download starts when it stops delivering.
        public var at: Double
        /// Seconds without a byte before the client gives its region back and reconnects.
        public var timeout: Double

        public init(connection: Int, at: Double, timeout: Double) {
            self.connection = connection
            self.at = at
            self.timeout = timeout
        }
    }

    /// The file's length in bytes.
    public var size: Int64
    /// Connections the item may use.
    public var connections: Int
    /// Each connection's cap, bytes per second.
    public var bytesPerSecond: Double
    /// Round-trip time, seconds.
    public var roundTrip: Double
    /// How fast the client hashes the contiguous prefix, bytes per second.
    public var hashBytesPerSecond: Double
    /// This connection runs at `bytesPerSecond / slowFactor` (nil: none does).
    public var slowConnection: Int?
    /// How many times slower the slow connection is.
    public var slowFactor: Double
    /// A connection that stalls once (nil: none does).
    public var stall: Stall?
    /// The engine's `min_segment` (docs/manifest.md#item-keys).
    public var minSegment: Int64

    public init(
        size: Int64, connections: Int, bytesPerSecond: Double, roundTrip: Double,
        hashBytesPerSecond: Double? = nil, slowConnection: Int? = nil, slowFactor: Double = 10,
        stall: Stall? = nil, minSegment: Int64 = 1 << 20
    ) {
        self.size = size
        self.connections = connections
        self.bytesPerSecond = bytesPerSecond
        self.roundTrip = roundTrip
        // nil: as fast as the engine takes the verifier to be.
        self.hashBytesPerSecond = hashBytesPerSecond ?? SimulatedSegmentBook.measuredHashRate
        self.slowConnection = slowConnection
        self.slowFactor = slowFactor
        self.stall = stall
        self.minSegment = minSegment
    }

    /// Connection `index`'s cap.
    public func rate(of index: Int) -> Double {
        index == slowConnection ? bytesPerSecond / slowFactor : bytesPerSecond
    }

    /// What no client can beat: every connection busy from the first round trip (the
    /// handshake and the request) to the end, or the hasher busy all along, whichever
    /// is slower: `max(size / Σ rates, size / hash rate) + 2 RTT`.
    public var physicalLimit: Double {
        let total = (0..<connections).reduce(0) { $0 + rate(of: $1) }
        return max(Double(size) / total, Double(size) / hashBytesPerSecond) + 2 * roundTrip
    }

    public var description: String {
        var text =
            "\(LinkScenario.bytes(size)), \(connections) × \(LinkScenario.rate(bytesPerSecond)), "
            + "RTT \(LinkScenario.seconds(roundTrip))"
        if let slowConnection { text += ", connection \(slowConnection) at 1/\(Int(slowFactor))" }
        if let stall { text += ", connection \(stall.connection) stalls at \(stall.at) s" }
        return text
    }

    static func bytes(_ count: Int64) -> String {
        if count >= 1 << 30, count % (1 << 30) == 0 { return "\(count >> 30) GiB" }
        if count >= 1 << 20, count % (1 << 20) == 0 { return "\(count >> 20) MiB" }
        return "\(count) B"
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        bytesPerSecond >= 1e6 ? "\(formatted(bytesPerSecond / 1e6)) MB/s" : "\(formatted(bytesPerSecond / 1e3)) kB/s"
    }

    static func seconds(_ value: Double) -> String { "\(formatted(value * 1000)) ms" }

    static func formatted(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
