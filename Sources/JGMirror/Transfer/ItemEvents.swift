/// What one item tells the event stream while it runs: its start, once, when the
/// first response reveals the file (or when it ends, if none did), then progress at
/// most once per `interval`, never before the start.
///
/// Held in its item's `EngineBound` fields: touched on the engine thread only, checked.
struct ItemEvents {
    let id: Int
    /// Seconds between progress events.
    let interval: Double
    /// The start event went out.
    private var announced = false
    /// When the last progress event went out, or the item started.
    private var lastReport = 0.0

    init(id: Int, interval: Double) {
        self.id = id
        self.interval = interval
    }

    /// The item sends its first request: the first progress event is due an interval later.
    mutating func begin(now: Double) { lastReport = now }

    /// The start event, the first time only.
    mutating func start(length: Int64?, connections: Int, resumedFrom: Int64) -> TransferEvent? {
        guard !announced else { return nil }
        announced = true
        return .started(id: id, length: length, connections: connections, resumedFrom: resumedFrom)
    }

    /// Whether a progress event is due at `now`; when it is, the next one is due an
    /// interval later.
    mutating func due(now: Double) -> Bool {
        guard announced, now - lastReport >= interval else { return false }
        lastReport = now
        return true
    }

    /// A progress event (see `due(now:)`).
    func report(bytesThisRun: Int64, bytesPresent: Int64, length: Int64?, connections: Int) -> TransferEvent {
        .progress(id: id, bytesThisRun: bytesThisRun, bytesPresent: bytesPresent, length: length, connections: connections)
    }
}
