import Synchronization

/// Carries the run's `HostTable` from the engine that fetched its lists to the one
/// that fetches its items (docs/hosts.md: one table shared by every item, list and
/// signature). A `sync` fetches the lists of `sets:` before its plan exists, on an
/// engine of its own; what that engine learned of each host — a host found down, one
/// cooling — is handed over, so the items do not learn it again by spending their
/// own requests and retries.
///
/// The table is taken once: a second run under the same options starts afresh, as
/// a new run must (a host down in one run is tried again by the next).
final class HostHandOff: Sendable {
    private let table = Mutex<HostTable?>(nil)

    /// Leaves `hosts` for the next engine of the run.
    func put(_ hosts: HostTable) { table.withLock { $0 = hosts } }

    /// What the previous engine of the run left, once.
    func take() -> HostTable? {
        table.withLock { table in
            defer { table = nil }
            return table
        }
    }
}
