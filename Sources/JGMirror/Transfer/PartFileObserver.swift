/// Told, in order, how far the part file's contiguous prefix of good bytes reaches,
/// so a verifier can hash it while the rest is still arriving (SPEC §7).
///
/// Calls come from the engine thread and must return at once.
public protocol PartFileObserver: Sendable {
    /// Bytes `[0, offset)` of the part file are final.
    func prefixCompleted(upTo offset: Int64)
    /// The part file starts over from zero (a changed remote file).
    func restarted()
}
