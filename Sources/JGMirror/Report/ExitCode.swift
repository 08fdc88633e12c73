/// The process exit codes of SPEC §9, and the one place results map onto them.
public enum ExitCode: Int32, Sendable, Codable, CaseIterable {
    case success = 0
    /// At least one item failed to download.
    case transferFailed = 1
    /// Usage error or invalid manifest; nothing was fetched.
    case usage = 2
    /// Checksum mismatch (sync), missing/mismatching file (verify), or a checksums
    /// list whose signature fails.
    case integrity = 3
    /// Disk full, permission denied, lock held.
    case local = 4
    /// Interrupted; state saved for resume.
    case interrupted = 130

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

    /// The exit code one item's outcome calls for.
    static func forResult(status: ItemStatus, error: ItemError?) -> ExitCode {
        switch status {
        case .downloaded, .unchanged, .unverified, .verified, .skipped, .deleted: .success
        case .interrupted: .interrupted
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
