import DequeModule

/// How fast each source of one item has delivered, judged over a window that survives
/// re-requests (docs/engine.md#slow-sources).
///
/// libcurl cuts a single request that stays under `min_rate` for `timeout`, and the
/// retry policy decides what follows. A source that trickles is never judged that way
/// when its requests end sooner: a stall replacement, a steal or a retry asks it again,
/// and each new request brings a byte or two that counts as progress. Here the bytes of
/// every request to a source add up, over the time the item spent with at least one of
/// that source's responses flowing (a body byte in, not paused by `--max-rate`). A
/// source is too slow for the item when, over the last `window` (the item's `timeout`)
/// of that time,
/// - it brought at least one byte and fewer than `floor × window`: silence is left to
///   the retry policy, so a server that stalled once and answers the next request
///   keeps its item;
/// - a request of it began flowing inside the window: one request that covers the
///   whole window is libcurl's to cut and the retry policy's to weigh;
/// - and its last quarter of the window was under the floor too: a source whose new
///   request flows fast is not cut for the slow one before it.
///
/// No clock, no curl: the item feeds it bytes and looks; tests drive it in virtual time.
struct SourcePace {
    /// Seconds of flowing responses a judgment spans: the item's `timeout`.
    let window: Double

    /// One source's bytes and the time its responses flowed.
    private struct Meter {
        /// Seconds during which at least one response of the source was flowing.
        var flowing = 0.0
        /// Bytes the source delivered to the item this run.
        var bytes: Int64 = 0
        /// `(flowing, bytes)` at earlier looks, oldest first: the window's start is the
        /// newest one at least `window` back.
        var samples: Deque<(flowing: Double, bytes: Int64)> = [(0, 0)]
        /// Whether a response was flowing at the last look.
        var wasFlowing = false
        /// `flowing` when the source's latest request began flowing.
        var lastStart = -Double.infinity

        /// Bytes since the newest sample at least `span` of flowing time back, and the
        /// time they span; nil while the source has not flowed that long.
        func brought(over span: Double) -> (bytes: Int64, seconds: Double)? {
            let start = flowing - span
            guard let first = samples.last(where: { $0.flowing <= start }) else { return nil }
            return (bytes - first.bytes, flowing - first.flowing)
        }
    }

    /// Samples kept per window: the engine looks on every pass of its loop, thousands
    /// of times a second on a busy run; the window's start is known to a 32nd of it.
    private static let samplesPerWindow = 32.0

    private var meters: [Int: Meter] = [:]
    private var lastLook: Double?
    /// Sources already judged too slow; each is reported once.
    private(set) var judged = Set<Int>()

    init(window: Double) { self.window = window }

    /// A slow source, with what it brought over the window.
    struct Verdict: Equatable {
        var source: Int
        /// Bytes it brought over `seconds` of flowing responses.
        var bytes: Int64
        var seconds: Double
    }

    /// `count` bytes of `source` were written; `first` when they are the first of
    /// their request.
    mutating func received(_ count: Int64, from source: Int, first: Bool = false) {
        var meter = meters[source] ?? Meter()
        meter.bytes += count
        if first { meter.lastStart = meter.flowing }
        meters[source] = meter
    }

    /// Looks at `now`, `flowing` being the sources with a response flowing now; returns
    /// the sources newly found too slow, `floor(source)` being the least bytes per
    /// second each must average.
    mutating func look(now: Double, flowing: Set<Int>, floor: (Int) -> Int64) -> [Verdict] {
        let elapsed = lastLook.map { max(0, now - $0) } ?? 0
        lastLook = now
        var verdicts: [Verdict] = []
        for source in Set(meters.keys).union(flowing) where !judged.contains(source) {
            var meter = meters[source] ?? Meter()
            let isFlowing = flowing.contains(source)
            // The time since the last look counts when a response flowed at either end of it.
            if meter.wasFlowing || isFlowing { meter.flowing += elapsed }
            meter.wasFlowing = isFlowing
            if let last = meter.samples.last, meter.flowing >= last.flowing + window / Self.samplesPerWindow {
                meter.samples.append((meter.flowing, meter.bytes))
            }
            let start = meter.flowing - window
            while meter.samples.count > 1, meter.samples[1].flowing <= start { meter.samples.removeFirst() }
            meters[source] = meter
            guard meter.lastStart > start, let (bytes, seconds) = meter.brought(over: window) else { continue }
            let least = Double(floor(source))
            guard bytes > 0, Double(bytes) < least * seconds else { continue }
            if let (recent, span) = meter.brought(over: window / 4), Double(recent) >= least * span { continue }
            judged.insert(source)
            verdicts.append(Verdict(source: source, bytes: bytes, seconds: seconds))
        }
        return verdicts
    }
}
