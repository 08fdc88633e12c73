/// What a sync under snapshot publishing left published (the report's `snapshot`,
/// SPEC §8): a CI job reads which snapshot readers see without looking at the tree.
public struct SnapshotOutcome: Sendable, Codable, Equatable {
    /// The snapshot `ROOT/current` names after the run (`<seq>-<stamp>`); nil when
    /// nothing was ever published.
    public var current: String?
    /// Whether this run published it; false when the run was not clean and `current`
    /// stayed where it was.
    public var published: Bool

    public init(current: String?, published: Bool) {
        self.current = current
        self.published = published
    }
}
