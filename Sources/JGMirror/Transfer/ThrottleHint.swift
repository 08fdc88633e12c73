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

    /// The longest wait a server can ask for: about 317 years, past any `max_wait`
    /// and the run's deadline, so the requests fail `rate_limited` at once.
    static let longest = 1e10

    /// A delta in whole seconds (RFC 9110's `delay-seconds`); one of more than ten
    /// digits is `longest`, never read as no wait at all.
    private static func seconds(_ text: String) -> Double? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return text.utf8.count > 10 ? longest : Double(text)
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
