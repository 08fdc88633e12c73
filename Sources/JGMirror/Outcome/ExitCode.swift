/// The process exit codes (docs/exit-codes.md#exit-codes), and the one place failures and results
/// map onto them: `ErrorCode.exitCode` for each code, `forResult` for an item, and
/// `SyncError.exitCode` from those two.
public enum ExitCode: Int32, Sendable, Codable, CaseIterable {
    /// Every selected item is present and verified (or unverified by choice).
    case success = 0
    /// An item failed to download, a list failed, a deletion was skipped, or a merged
    /// report lacks a shard.
    case transferFailed = 1
    /// Usage error or invalid manifest, nothing was fetched; or a merge of reports of
    /// different runs.
    case usage = 2
    /// Checksum mismatch or a list whose signature fails (sync), missing or mismatching
    /// file (verify).
    case integrity = 3
    /// Disk full, permission denied, unsafe path, lock held, prune over `--max-delete`,
    /// an output that could not be written.
    case local = 4
    /// Interrupted; state saved for resume.
    case interrupted = 130

    /// What the code means, for the person reading `--help` or the man page's EXIT
    /// STATUS, both made from this one table (docs/exit-codes.md#exit-codes).
    public var meaning: String {
        switch self {
        case .success: "every selected item is present and verified (or unverified by choice)"
        case .transferFailed:
            "at least one item failed to download (network, HTTP, remote, a host down or rate-limiting past max_wait), the run reached --max-duration, a list could not be fetched or parsed, a deletion was skipped because the run was not clean, or a merged report lacks a shard (shard_missing)"
        case .usage:
            "usage error or invalid manifest (the manifest itself, not a list it names); nothing was fetched; or report merge of reports of different runs (manifest, filters or shard count)"
        case .integrity:
            "integrity failure: a checksum mismatch or a list whose signature fails (sync), or a missing/mismatching file (verify)"
        case .local:
            "local failure: disk full, permission denied, unsafe path, a sync already holds the tree, prune over --max-delete, a report, metrics or events output that could not be written"
        case .interrupted: "interrupted; state saved for resume"
        }
    }

    /// The codes from the one that wins when several apply to the one that loses.
    public static var byPrecedence: [ExitCode] { allCases.sorted { $0.precedence > $1.precedence } }

    /// "When several apply, …": the rule of `combine`, in words.
    public static var precedenceRule: String {
        "When several apply, the highest in this order wins: "
            + byPrecedence.filter { $0 != .success }.map { String($0.rawValue) }.joined(separator: ", ") + "."
    }

    /// Higher wins when several apply: 130, 2, 3, 4, 1, 0.
    var precedence: Int {
        switch self {
        case .success: 0
        case .transferFailed: 1
        case .local: 2
        case .integrity: 3
        case .usage: 4
        case .interrupted: 5
        }
    }

    /// The most important of several codes.
    public static func combine(_ codes: [ExitCode]) -> ExitCode {
        codes.max { $0.precedence < $1.precedence } ?? .success
    }

    /// The exit code that a set of item results calls for.
    public static func forResults(_ items: [ItemResult]) -> ExitCode {
        combine(items.map { forResult(status: $0.status, error: $0.error) })
    }

    /// The exit code one item's outcome calls for. A failed item never asks for 2 or
    /// 130: the run went on past it.
    static func forResult(status: ItemStatus, error: ItemError?) -> ExitCode {
        switch status {
        case .downloaded, .unchanged, .unverified, .verified, .skipped, .deleted, .keptRemoved, .notServed: .success
        // Stopped at `--max-duration`: the run ran out of time, nobody interrupted it.
        case .interrupted: error?.code == .deadline ? .transferFailed : .interrupted
        case .deleteSkipped: .transferFailed
        case .mismatch, .missing: .integrity
        case .failed:
            switch error?.code.exitCode {
            case .local: .local
            case .integrity: .integrity
            default: .transferFailed
            }
        }
    }
}

extension ErrorCode {
    /// The exit code a failure with this code leads to (docs/exit-codes.md#error-codes).
    public var exitCode: ExitCode {
        switch self {
        case .diskFull, .permissionDenied, .ioError, .unsafePath, .curl, .locked, .local, .maxDelete: .local
        case .checksumMismatch, .signature, .staleRelease, .missing, .linkMismatch: .integrity
        case .interrupted: .interrupted
        case .manifest, .usage: .usage
        case .http, .connect, .resolve, .timeout, .tooSlow, .connection, .protocolViolation, .tls, .redirect, .notFound, .range,
            .transfer, .changed, .sizeMismatch, .tooLarge, .list, .listShrunk, .deleteSkipped, .shardMissing, .hostDown,
            .rateLimited,
            .deadline:
            .transferFailed
        }
    }

    /// A failure of this machine rather than of the network or the remote side.
    public var isLocal: Bool { exitCode == .local }
}
