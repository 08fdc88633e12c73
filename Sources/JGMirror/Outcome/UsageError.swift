import Foundation

/// A wrong command line: exit 2 (docs/exit-codes.md#exit-codes).
public struct UsageError: LocalizedError, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    /// Control characters are shown escaped, never written raw to a terminal.
    public var errorDescription: String? { Rules.printable(message) }

    /// `sync --delete` under `--shard`, `--tag` or `--skip-tag` (docs/deletions.md#guards).
    public static let deleteUnderFilter = UsageError(
        "--delete cannot be combined with --shard, --tag or --skip-tag: the run does not see the whole manifest, so it cannot tell which files no item produces"
    )

    /// `sync --delete` of a manifest that selects no item (docs/deletions.md#guards): it would
    /// empty the root, which a templating mistake is far likelier to ask for than an operator.
    public static let deleteEverything = UsageError(
        "--delete with a manifest that names no item would delete every file under the root; nothing was deleted or fetched"
    )
}
