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
    /// The run changed nothing, so no snapshot was made: `current` stays where it was
    /// and no snapshot was retired (docs/publishing.md#snapshot).
    public var unchanged: Bool

    public init(current: String?, published: Bool, folder: String? = nil, unchanged: Bool = false) {
        self.current = current
        self.published = published
        self.folder = folder
        self.unchanged = unchanged
    }

    private enum CodingKeys: String, CodingKey {
        case current, published, folder, unchanged
    }

    /// Reads what any version wrote (an older one had no `unchanged`).
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        current = try container.decodeIfPresent(String.self, forKey: .current)
        published = try container.decode(Bool.self, forKey: .published)
        folder = try container.decodeIfPresent(String.self, forKey: .folder)
        unchanged = try container.decodeIfPresent(Bool.self, forKey: .unchanged) ?? false
    }

    /// A few words for the terminal's closing line: what readers see after the run.
    public var summary: String {
        let name = folder.map { "snapshot of '\($0)'" } ?? "snapshot"
        guard let current else { return "\(name): nothing published" }
        if unchanged { return "\(name) \(current) unchanged" }
        return published ? "\(name) \(current) published" : "\(name) not published (still \(current))"
    }
}
