/// One origin in a report's `hosts` section (docs/reports.md#hosts-section): what the run asked of
/// it and how it stood at the end. Labelled by origin only (`scheme://host:port`), never a
/// path, query or credential.
public struct HostSummary: Sendable, Equatable, Codable {
    /// `scheme://host:port`.
    public var origin: String
    /// Requests sent to it (probes included; requests held back are not).
    public var requests: Int
    /// Body bytes from it the run kept (written to part files or held bodies).
    public var bytes: Int64
    /// Body bytes it delivered, kept or not: what it cost the origin, less what it
    /// pushed into connections the run closed before reading.
    public var bytesReceived: Int64
    /// Requests that got no answer (refused, reset, no first byte in time).
    public var failures: Int
    /// 429 and 503 answers.
    public var throttled: Int
    /// Seconds it asked to be left alone (`Retry-After`), overlaps counted once.
    public var coolingS: Double
    /// `up`, `cooling`, `suspect` or `down` when the run ended.
    public var state: String

    public init(
        origin: String, requests: Int, bytes: Int64, bytesReceived: Int64? = nil, failures: Int, throttled: Int,
        coolingS: Double, state: String
    ) {
        self.origin = origin
        self.requests = requests
        self.bytes = bytes
        self.bytesReceived = bytesReceived ?? bytes
        self.failures = failures
        self.throttled = throttled
        self.coolingS = coolingS
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case origin, requests, bytes, failures, throttled, state
        case bytesReceived = "bytes_received"
        case coolingS = "cooling_s"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        origin = try container.decode(String.self, forKey: .origin)
        requests = try container.decode(Int.self, forKey: .requests)
        bytes = try container.decode(Int64.self, forKey: .bytes)
        // Reports before bytes_received counted only what was kept.
        bytesReceived = try container.decodeIfPresent(Int64.self, forKey: .bytesReceived) ?? bytes
        failures = try container.decode(Int.self, forKey: .failures)
        throttled = try container.decode(Int.self, forKey: .throttled)
        coolingS = try container.decode(Double.self, forKey: .coolingS)
        state = try container.decode(String.self, forKey: .state)
    }

    var json: JSONValue {
        .object([
            ("origin", .string(origin)), ("requests", .int(Int64(requests))), ("bytes", .int(bytes)),
            ("bytes_received", .int(bytesReceived)), ("failures", .int(Int64(failures))), ("throttled", .int(Int64(throttled))),
            ("cooling_s", .double(RunReport.rounded(coolingS))), ("state", .string(state)),
        ])
    }
}
