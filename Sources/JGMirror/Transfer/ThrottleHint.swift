/// How long a server that answered 429 or 503 asks to be left alone (docs/hosts.md#rate-limits),
/// read from `Retry-After` (seconds, or an HTTP date) or, without it, `RateLimit-Reset`
/// (seconds, from the IETF rate-limit headers draft). Pure: the wall clock an HTTP
/// date is measured against is passed in.
enum ThrottleHint {
    /// Seconds to wait from `wallClock` (seconds since the epoch); nil when neither
    /// header gives a time. A date already past asks for no wait.
    static func wait(retryAfter: String?, rateLimitReset: String?, wallClock: Double) -> Double? {
        if let retryAfter = retryAfter?.trimmingSpaces, !retryAfter.isEmpty {
            if let seconds = seconds(retryAfter) { return seconds }
            if let date = HTTPDate.parse(retryAfter) { return max(0, Double(date) - wallClock) }
        }
        if let reset = rateLimitReset?.trimmingSpaces, let seconds = seconds(reset) { return seconds }
        return nil
    }

    /// A delta in whole seconds (RFC 9110's `delay-seconds`), at most ten digits: a
    /// longer one is past any `max_wait` anyway.
    private static func seconds(_ text: String) -> Double? {
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Double(text)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view.removeFirst() }
        while view.last == " " || view.last == "\t" { view.removeLast() }
        return String(view)
    }
}
