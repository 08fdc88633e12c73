/// The host options (docs/manifest.md#host-keys, docs/hosts.md), set once for the run in
/// `defaults`: how long a connection may take to open, the slowest rate it may keep, and how the
/// run judges a host that does not answer or asks to be left alone. Unset options keep
/// their defaults (`TransferEngine.Configuration`, `HostTable.Settings`).
public struct HostOptions: Sendable, Equatable {
    /// Seconds the connect and TLS handshake may take (`connect_timeout`, 10 s).
    public var connectTimeout: Double?
    /// Bytes per second under which a connection, for `timeout`, is stalled
    /// (`min_rate`, `Rules.minRate`).
    public var minRate: Int64?
    /// Seconds without an answer after which a host is down (`host_grace`, 30 s).
    public var hostGrace: Double?
    /// The longest `Retry-After` the run waits for (`max_wait`, 5 min).
    public var maxWait: Double?

    public init() {}

    /// The manifest keys, in `defaults` and per origin (`Rules.table`).
    static let keys = Rules.keys(in: .origin)
}
