/// One setting that a manifest key, a command-line option and the library all take:
/// its default, the values it accepts, and how a value outside them is refused.
///
/// `Rules` holds one per setting (`Rules.connections`, `Rules.timeout`, …). The
/// manifest parser, the command line's options and their help, `get`'s `Download`,
/// `SyncOptions` and the engine's configuration read their defaults and limits there,
/// so each is written once. Messages name neither the key nor the option: the caller
/// puts `'timeout'` or `--timeout` in front.
///
/// A new option: one `static let` in `Rules` (`Setting(seconds: 10, range: 0.1...3600)`,
/// `Setting(default: 8, range: 1...4096)` or `Setting(bytes: 1 << 20, range: …)`),
/// `described` with its manifest key, where it is written, its command-line options
/// and its help, and its `row` in `Rules.table`; the parser checks a key with
/// `setting.problem(value)` (`duration(Rules.x)` for a duration in `defaults`), the
/// command line takes `setting.defaultValue` or `defaultText` as its default and
/// `optionHelp` as its help, and a setting the engine reads goes into
/// `TransferSettings` (public, with `SyncOptions.x` for free) or
/// `TransferEngine.Configuration` (internal), its default from the table.
/// `scripts/docs.sh` then writes the row into docs/manifest.md.
public struct Setting<Value: Comparable & Sendable>: Sendable {
    /// The value when neither the manifest nor the command line gives one.
    public let defaultValue: Value
    /// Every value accepted.
    public let range: ClosedRange<Value>
    /// A value as the manifest and the command line write it: `6`, `30s`, `1MiB`.
    let format: @Sendable (Value) -> String

    /// `value` as the manifest and the command line write it: `6`, `30s`, `1MiB`.
    public func text(_ value: Value) -> String { format(value) }
    /// What is wrong with a value outside `range`.
    let refusal: @Sendable (Setting, Value) -> String
    /// What the value is, for the option table: `whole number`, `duration`, `size`, `rate`.
    let type: String
    /// What the option table says of the setting beyond its default and range: nil
    /// until `described`.
    public internal(set) var about: OptionRow?

    /// The default as the manifest and the command line write it (`30s`, `1MiB`).
    public var defaultText: String { format(defaultValue) }

    /// `1 to 64`, `100ms to 24h`: the accepted values, for help texts.
    public var rangeText: String { "\(format(range.lowerBound)) to \(format(range.upperBound))" }

    /// What is wrong with `value`, or nil when the setting takes it.
    public func problem(_ value: Value) -> String? { range.contains(value) ? nil : refusal(self, value) }

    /// The setting with its row of the option table: the manifest `key` (nil for an
    /// option of the command line alone), where it is written, the command-line
    /// `flags` that take it, its `help`, and an `example` value. `defaultText` stands in
    /// for a default the setting's value cannot say (`1GiB, or 1% of the file system`),
    /// `bounds` for a range it cannot (`0 or more`), `label` names a row without a key
    /// or option.
    func described(
        key: String?, places: [OptionRow.Place] = [], flags: [String] = [], help: String, example: String? = nil,
        defaultText: String? = nil, bounds: String? = nil, label: String? = nil
    ) -> Setting {
        var setting = self
        setting.about = OptionRow(
            key: key, places: places, flags: flags, type: type, defaultText: defaultText ?? self.defaultText,
            bounds: bounds ?? rangeText, help: help, example: example, label: label)
        return setting
    }

    /// The setting's row of the option table (`Rules.table`).
    public var row: OptionRow {
        about
            ?? OptionRow(key: nil, places: [], type: type, defaultText: defaultText, bounds: rangeText, help: "")
    }

    /// The help of a command-line option that takes the setting: its help and range,
    /// `Items in flight at once (1 to 4096).`; `lead` replaces the help's words
    /// (`Override every item's connections`).
    public func optionHelp(_ lead: String? = nil) -> String {
        "\(lead ?? row.help) (\(row.bounds ?? rangeText))."
    }
}

extension Setting where Value == Int {
    /// A whole number: `must be a whole number from 1 to 64, not 0`.
    init(default value: Int, range: ClosedRange<Int>) {
        self.init(
            defaultValue: value, range: range, format: { String($0) },
            refusal: { setting, value in "must be a whole number from \(setting.rangeText), not \(value)" },
            type: "whole number")
    }
}

extension Setting where Value == Double {
    /// A duration in seconds: `must be from 100ms to 24h`.
    init(seconds value: Double, range: ClosedRange<Double>) {
        self.init(
            defaultValue: value, range: range, format: Rules.formatDuration,
            refusal: { setting, _ in "must be from \(setting.rangeText)" }, type: "duration")
    }
}

extension Setting where Value == Int64 {
    /// A size in bytes: `must be at least 16KiB`, `must be at most 1EiB`.
    init(bytes value: Int64, range: ClosedRange<Int64>) {
        self.init(defaultValue: value, range: range, format: Rules.formatSize, refusal: Self.sizeRefusal, type: "size")
    }

    /// A rate in bytes per second: `1KiB/s`; refused as a size is.
    init(bytesPerSecond value: Int64, range: ClosedRange<Int64>) {
        self.init(
            defaultValue: value, range: range, format: Self.formatRate, refusal: Self.sizeRefusal, type: "rate")
    }

    /// `512B/s`, `1KiB/s`: a rate as `min_rate` and `--max-rate` take it.
    private static func formatRate(_ bytes: Int64) -> String {
        let size = Rules.formatSize(bytes)
        return size + (size.last?.isNumber == true ? "B/s" : "/s")
    }

    /// `must be at least 16KiB`, `must be at most 1EiB`.
    private static func sizeRefusal(_ setting: Setting, _ value: Int64) -> String {
        value < setting.range.lowerBound
            ? "must be at least \(setting.format(setting.range.lowerBound))"
            : "must be at most \(setting.format(setting.range.upperBound))"
    }
}
