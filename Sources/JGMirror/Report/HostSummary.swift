/// One origin in a report's `hosts` section (docs/reports.md#hosts-section): what the run asked of
/// it and how it stood at the end. Labelled by origin only (`scheme://host:port`), never a
/// path, query or credential.
public struct HostSummary: Sendable, Equatable, Codable {
    /// `scheme://host:port`.
    public var origin: String
    /// Requests sent to it (probes included; requests held back are not).
    public var requests: Int
    /// Body bytes it sent.
    public var bytes: Int64
    /// Requests that got no answer (refused, reset, no first byte in time).
    public var failures: Int
    /// 429 and 503 answers.
    public var throttled: Int
    /// Seconds it asked to be left alone (`Retry-After`), overlaps counted once.
    public var coolingS: Double
    /// `up`, `cooling`, `suspect` or `down` when the run ended.
    public var state: String

    public init(
        origin: String, requests: Int, bytes: Int64, failures: Int, throttled: Int, coolingS: Double, state: String
    ) {
        self.origin = origin
        self.requests = requests
        self.bytes = bytes
        self.failures = failures
        self.throttled = throttled
        self.coolingS = coolingS
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case origin, requests, bytes, failures, throttled, state
        case coolingS = "cooling_s"
    }

    var json: JSONValue {
        .object([
            ("origin", .string(origin)), ("requests", .int(Int64(requests))), ("bytes", .int(bytes)),
            ("failures", .int(Int64(failures))), ("throttled", .int(Int64(throttled))),
            ("cooling_s", .double(RunReport.rounded(coolingS))), ("state", .string(state)),
        ])
    }
}
