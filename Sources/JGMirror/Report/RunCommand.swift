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

    /// Whether the command reads the lists of `sets:` and `checksums:` while it loads
    /// the plan, reading the tree's cached copies but never writing them; sync reads
    /// them as it runs, through its own engine, and keeps the cache up to date.
    public var readsListsWhilePlanning: Bool { self != .sync }
}
