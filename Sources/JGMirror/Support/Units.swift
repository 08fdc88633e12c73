import Foundation

/// Parsing of the human units the manifest and the command line accept.
public enum Units {
    /// Parses a byte count such as `1MiB`, `20M`, `512KB` or `4096`.
    ///
    /// Binary units (`KiB`, `MiB`, `GiB`, and the short `K`, `M`, `G` used by
    /// `--max-rate`, as curl's `--limit-rate` does) are powers of 1024; decimal units
    /// (`KB`, `MB`, `GB`) are powers of 1000. Units are read in any case (`1k`,
    /// `20m`, `1gib`). The number is `parseDecimal`'s, a bare one `parseWholeNumber`'s.
    /// Returns nil for anything else.
    public static func parseSize(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let multipliers: [(String, Double)] = [
            ("kib", 1024), ("mib", 1024 * 1024), ("gib", 1024 * 1024 * 1024), ("tib", 1024 * 1024 * 1024 * 1024),
            ("pib", 0x1p50), ("eib", 0x1p60),
            ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("tb", 1_000_000_000_000), ("pb", 1e15), ("eb", 1e18),
            ("k", 1024), ("m", 1024 * 1024), ("g", 1024 * 1024 * 1024), ("t", 1024 * 1024 * 1024 * 1024), ("b", 1),
        ]
        for (suffix, factor) in multipliers where trimmed.hasSuffix(suffix) {
            let number = trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            guard let value = parseDecimal(number) else { return nil }
            let bytes = (value * factor).rounded()
            guard bytes < Double(Int64.max) else { return nil }
            return Int64(bytes)
        }
        return parseWholeNumber(trimmed).map(Int64.init)
    }

    /// Parses a rate in bytes per second: a size (`20M`, `500k`, `1.5MiB`), optionally
    /// followed by `/s` as curl's `--limit-rate` users write it.
    public static func parseRate(_ text: String) -> Int64? {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased().hasSuffix("/s") { trimmed.removeLast(2) }
        return parseSize(trimmed)
    }

    /// Parses a duration such as `30s`, `250ms`, `1.5s`, `2m` or `1d` into seconds; a
    /// bare number is seconds. The number is `parseDecimal`'s.
    public static func parseDuration(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            let number = trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            return parseDecimal(number).map { $0 * factor }
        }
        return parseDecimal(trimmed)
    }

    /// Parses a whole number as manifests and the command line write it
    /// (docs/manifest.md#values): decimal digits, with a minus sign only where
    /// `negative` numbers make sense (a `tag`) and never on zero (`-0`). No `+`, no
    /// `0x`, no spaces, nothing past `Int`; nil for anything else.
    public static func parseWholeNumber(_ text: String, negative: Bool = false) -> Int? {
        var digits = Substring(text)
        let minus = digits.hasPrefix("-")
        if minus {
            guard negative else { return nil }
            digits = digits.dropFirst()
        }
        guard isDigits(digits), let value = Int(digits) else { return nil }
        if minus { return value == 0 ? nil : -value }
        return value
    }

    /// The number of a size or a duration: decimal digits, with a fraction after a point
    /// (`1.5`); no sign, exponent, `0x`, `inf` or `nan`, which `Double` would all read.
    static func parseDecimal(_ text: String) -> Double? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.allSatisfy(isDigits), let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// Whether `text` is one or more of the ASCII digits 0–9.
    private static func isDigits(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Formats a byte count for people: `1.5 MiB`.
    public static func formatBytes(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
