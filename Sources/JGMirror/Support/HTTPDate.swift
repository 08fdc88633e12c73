import Foundation

/// The IMF-fixdate form of HTTP dates (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `seconds` since the epoch as an HTTP date.
    static func format(seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Seconds since the epoch of an IMF-fixdate, the form RFC 9110 requires senders
    /// to use (`Retry-After: Wed, 21 Oct 2026 07:28:00 GMT`); nil for anything else,
    /// a day its month does not have included.
    static func parse(_ text: String) -> Int64? {
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 6, fields[0].hasSuffix(","), days.contains(String(fields[0].dropLast())), fields[5] == "GMT",
            let day = Int32(fields[1]), (1...31).contains(day), let month = months.firstIndex(of: String(fields[2])),
            let year = Int32(fields[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = fields[4].split(separator: ":", omittingEmptySubsequences: false).compactMap { Int32($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else {
            return nil
        }
        return UTCDate.seconds(
            year: year, month: Int32(month), day: day, hour: clock[0], minute: clock[1], second: clock[2])
    }
}
