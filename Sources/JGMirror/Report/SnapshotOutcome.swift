/// What a sync under snapshot publishing left published (the report's `snapshot`,
/// and one of its `set_snapshots` for each set published as snapshots of its own;
/// docs/reports.md#json-report): a CI job reads which snapshot readers see without looking at the
/// tree.
public struct SnapshotOutcome: Sendable, Codable, Equatable {
    /// The snapshot the link names after the run (`<seq>-<stamp>`); nil when nothing
    /// was ever published.
    public var current: String?
    /// Whether this run published it; false when the run (or the set) was not clean
    /// and the link stayed where it was.
    public var published: Bool
    /// The set's folder (ending in `/`) for a set's own snapshots; nil for the whole
    /// tree's (`ROOT/current`).
    public var folder: String?

    public init(current: String?, published: Bool, folder: String? = nil) {
        self.current = current
        self.published = published
        self.folder = folder
    }
}
