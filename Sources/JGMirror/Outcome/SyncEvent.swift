/// What a running sync reports, in order per item: started, progress…, finished.
public enum SyncEvent: Sendable {
    /// The first response arrived (or the item resumed): length when known, connections planned.
    case itemStarted(ItemStart)
    /// Bytes moved; throttled to a few per second per item.
    case progress(ItemProgress)
    /// The item reached its final state; the same value the report carries.
    case itemFinished(ItemResult)
}

/// An item's first event.
public struct ItemStart: Sendable {
    public var dest: String
    public var tag: Int?
    public var length: Int64?
    public var connections: Int
    public var resumedFrom: Int64
}

/// Progress of one item.
public struct ItemProgress: Sendable {
    public var dest: String
    public var tag: Int?
    /// Bytes received in this run.
    public var bytesThisRun: Int64
    /// Bytes on disk, earlier runs included.
    public var bytesPresent: Int64
    /// The expected total, when known.
    public var expected: Int64?
    /// Connections transferring right now.
    public var connections: Int
}
