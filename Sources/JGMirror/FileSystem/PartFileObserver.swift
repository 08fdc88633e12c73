/// Told, in order, how far the part file's contiguous prefix of good bytes reaches,
/// so a verifier can hash it while the rest is still arriving (docs/engine.md#verification).
///
/// Calls come from the engine thread and must return at once.
public protocol PartFileObserver: Sendable {
    /// Bytes `[0, offset)` of the part file are final.
    func prefixCompleted(upTo offset: Int64)
    /// The part file starts over from zero (a changed remote file).
    func restarted()
    /// A small file's bytes as they are written at `offset`, so they need not be
    /// read back; only called for files of at most `partFileInlineLimit` bytes.
    func written(_ bytes: UnsafeRawBufferPointer, at offset: Int64)
}

extension PartFileObserver {
    public func written(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {}
}

/// Files up to this length hand their bytes to the observer as they are written.
let partFileInlineLimit: Int64 = 1 << 20
