/// The command a report is of, as its `command` key spells it (docs/reports.md#json-report); what a
/// command does differently is decided on these cases, never on their spellings.
public enum RunCommand: String, Sendable, CaseIterable {
    /// Fetch what is missing or stale, verify, report.
    case sync
    /// Hash what is on disk against the manifest; nothing is fetched.
    case verify
    /// Show the queue and what sync would do; nothing is fetched but lists.
    case plan
    /// One URL over several connections.
    case get

    /// Whether the command keeps the tree's cached copies of checksums lists up to
    /// date (sync); the others only read them.
    public var writesListCache: Bool { self == .sync }

    /// Whether the command applies the hashes `checksums:` lists give while it loads
    /// the plan; sync applies them through its own engine and cache as it runs.
    public var appliesListsWhilePlanning: Bool { self != .sync }
}
