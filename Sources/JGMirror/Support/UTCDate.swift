import Foundation

/// A date and time of day in UTC, as the dates jgmirror reads write them: HTTP's
/// (`HTTPDate`) and a Release file's (`DebianDate`). Each parses its own form; this
/// turns the fields into seconds once, for both.
enum UTCDate {
    /// Seconds since the epoch of `year`-`month`-`day` `hour`:`minute`:`second` UTC
    /// (`month` 0 for January, the fields in their ranges); nil for a day its month
    /// does not have (31 Feb, which `timegm` would roll over into March: such a date
    /// was never written). A leap second (`second` 60) is the next minute's first.
    static func seconds(year: Int32, month: Int32, day: Int32, hour: Int32, minute: Int32, second: Int32) -> Int64? {
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = Int64(timegm(&parts))
        var check = time_t(seconds)
        var back = tm()
        gmtime_r(&check, &back)
        guard back.tm_mday == day || second == 60 else { return nil }
        return seconds
    }
}
