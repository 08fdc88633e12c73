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
/// `Setting(default: 8, range: 1...4096)` or `Setting(bytes: 1 << 20, range: …)`); the
/// parser checks a key with `setting.problem(value)` (`duration(Rules.x)` for a
/// duration in `defaults`), the command line takes `setting.defaultValue` or
/// `defaultText` as its default and `rangeText` in its help, and a setting the engine
/// reads goes into `TransferSettings` (public, with `SyncOptions.x` for free) or
/// `TransferEngine.Configuration` (internal), its default from the table.
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

    /// The default as the manifest and the command line write it (`30s`, `1MiB`).
    public var defaultText: String { format(defaultValue) }

    /// `1 to 64`, `100ms to 24h`: the accepted values, for help texts.
    public var rangeText: String { "\(format(range.lowerBound)) to \(format(range.upperBound))" }

    /// What is wrong with `value`, or nil when the setting takes it.
    public func problem(_ value: Value) -> String? { range.contains(value) ? nil : refusal(self, value) }
}

extension Setting where Value == Int {
    /// A whole number: `must be a whole number from 1 to 64, not 0`.
    init(default value: Int, range: ClosedRange<Int>) {
        self.init(
            defaultValue: value, range: range, format: { String($0) },
            refusal: { setting, value in "must be a whole number from \(setting.rangeText), not \(value)" })
    }
}

extension Setting where Value == Double {
    /// A duration in seconds: `must be from 100ms to 24h`.
    init(seconds value: Double, range: ClosedRange<Double>) {
        self.init(defaultValue: value, range: range, format: Rules.formatDuration) { setting, _ in
            "must be from \(setting.rangeText)"
        }
    }
}

extension Setting where Value == Int64 {
    /// A size in bytes: `must be at least 16KiB`, `must be at most 1EiB`.
    init(bytes value: Int64, range: ClosedRange<Int64>) {
        self.init(defaultValue: value, range: range, format: Rules.formatSize) { setting, value in
            value < setting.range.lowerBound
                ? "must be at least \(setting.format(setting.range.lowerBound))"
                : "must be at most \(setting.format(setting.range.upperBound))"
        }
    }
}
