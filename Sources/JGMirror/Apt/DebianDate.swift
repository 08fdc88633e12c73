import Foundation

/// The dates of a Release's `Date` and `Valid-Until` fields: RFC 2822's form, as
/// Debian's tools write it (`Sat, 10 Jun 2023 08:57:04 UTC`). Read as RFC 2822
/// allows: the day name optional, a one- or two-digit day, a month name in any case,
/// seconds optional, and the zone `UTC`, `GMT`, `UT`, `Z` or a numeric offset
/// (`+0000`, `-0500`). apt itself takes zero offsets only; a mirror must read what
/// it compares, whatever apt later makes of it.
enum DebianDate {
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since the epoch, or nil when `text` is not such a date.
    static func parse(_ text: String) -> Int64? {
        var fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        if let first = fields.first, first.hasSuffix(",") {
            guard days.contains(first.dropLast().lowercased()) else { return nil }
            fields.removeFirst()
        }
        guard fields.count == 5, fields[0].utf8.count <= 2, fields[0].allSatisfy(\.isASCIIDigit),
            let day = Int32(fields[0]), (1...31).contains(day), let month = months.firstIndex(of: fields[1].lowercased()),
            fields[2].utf8.count == 4, fields[2].allSatisfy(\.isASCIIDigit), let year = Int32(fields[2]),
            (1970...9999).contains(year),
            let (hour, minute, second) = clock(fields[3]), let offset = offset(fields[4])
        else { return nil }
        let seconds = UTCDate.seconds(year: year, month: Int32(month), day: day, hour: hour, minute: minute, second: second)
        return seconds.map { $0 - offset }
    }

    /// `HH:MM` or `HH:MM:SS` (a leap second allowed).
    private static func clock(_ text: Substring) -> (Int32, Int32, Int32)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, parts.allSatisfy({ $0.utf8.count == 2 && $0.allSatisfy(\.isASCIIDigit) })
        else { return nil }
        let values = parts.compactMap { Int32($0) }
        let second = values.count == 3 ? values[2] : 0
        guard values[0] <= 23, values[1] <= 59, second <= 60 else { return nil }
        return (values[0], values[1], second)
    }

    /// The zone's offset east of UTC, in seconds.
    private static func offset(_ text: Substring) -> Int64? {
        switch text.uppercased() {
        case "UTC", "GMT", "UT", "Z": return 0
        default: break
        }
        guard text.utf8.count == 5, let sign = text.first, sign == "+" || sign == "-",
            text.dropFirst().allSatisfy(\.isASCIIDigit), let value = Int64(text.dropFirst())
        else { return nil }
        let (hours, minutes) = (value / 100, value % 100)
        guard hours <= 23, minutes <= 59 else { return nil }
        return (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
    }
}

extension Character {
    /// 0-9 only (`isNumber` takes other scripts' digits too).
    fileprivate var isASCIIDigit: Bool { asciiValue.map { (0x30...0x39).contains($0) } ?? false }
}
