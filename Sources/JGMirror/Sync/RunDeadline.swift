import Synchronization

/// `--max-duration`: whether the run reached its deadline and was stopped for it,
/// shared by the session that stops the run and the items that say why they stopped
/// (`interrupted` with code `deadline`, exit 1 rather than 130: nobody interrupted
/// the run, it ran out of the time it was given, as a failed transfer does).
final class RunDeadline: Sendable {
    private let flag = Atomic<Bool>(false)

    /// The run was stopped at its deadline.
    var reached: Bool { flag.load(ordering: .acquiring) }

    func markReached() { flag.store(true, ordering: .releasing) }
}
