/// When the simulated client opens its connections other than the first.
public enum Opening: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// After the first response's head arrives with the length (2 RTT): handshake,
    /// then request, so their first bytes arrive at 4 RTT. What the engine does.
    case afterFirstHead = "after-first-head"
    /// Handshakes start with the first request, requests leave when the head arrives:
    /// first bytes at 3 RTT.
    case preconnected
    /// The length is known beforehand (a manifest's `size:`): every connection sends
    /// its request at once, first bytes at 2 RTT, as the physical limit assumes.
    case knownSize = "known-size"

    public var description: String { rawValue }
}
