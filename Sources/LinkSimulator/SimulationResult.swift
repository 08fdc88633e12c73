/// What one simulated download took.
public struct SimulationResult: Sendable, Equatable {
    /// Seconds from the first request until the last byte is written and hashed.
    public var seconds: Double
    /// Seconds until the last byte arrived.
    public var lastByte: Double
    /// `LinkScenario.physicalLimit`.
    public var physicalLimit: Double
    /// HTTP requests sent, the first one included.
    public var requests: Int
    /// TCP connections opened.
    public var connectionsOpened: Int
    /// Bytes the book accepted: the file's length exactly, when nothing is fetched twice.
    public var bytesWritten: Int64
    /// Bytes delivered past a steal's cut and refused (fetched twice).
    public var overrun: Int64
    /// The written ranges, merged: `[0, size)` when every byte arrived exactly once.
    public var written: [Range<Int64>]
    /// Events processed.
    public var events: Int

    /// `seconds / physicalLimit`: 1 is as fast as the link and the hasher allow.
    public var ratio: Double { seconds / physicalLimit }

    /// Seconds spent hashing after the last byte arrived.
    public var hashTail: Double { seconds - lastByte }
}
