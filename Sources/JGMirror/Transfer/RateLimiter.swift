/// A token bucket for `--max-rate`: the overall cap across every transfer of a run.
///
/// Writers take tokens as bytes land; when the bucket is empty their transfers are
/// paused (libcurl keeps the data) and resumed once it refills. Held in the engine's
/// `EngineBound` loop: touched on the engine thread only, checked.
struct RateLimiter {
    let bytesPerSecond: Double
    private var tokens: Double
    private var last: Double

    init(bytesPerSecond: Int64, now: Double) {
        self.bytesPerSecond = Double(bytesPerSecond)
        tokens = Double(bytesPerSecond) / 10
        last = now
    }

    var isEmpty: Bool { tokens <= 0 }

    mutating func refill(now: Double) {
        // Allow at most a tenth of a second of burst.
        tokens = min(bytesPerSecond / 10, tokens + (now - last) * bytesPerSecond)
        last = now
    }

    mutating func take(_ bytes: Int) { tokens -= Double(bytes) }
}
