import Foundation

/// Why a run stopped before or outside item processing; each maps to an exit code.
public enum SyncError: LocalizedError, Sendable {
    /// The manifest (or a checksums file) is invalid: exit 2.
    case manifest(ManifestError)
    /// The command line asks for something impossible (a tag filter that selects no
    /// item, a bad shard): exit 2.
    case usage(UsageError)
    /// Another sync holds this tree, a folder above it or one below it (the message
    /// says which): exit 4, nothing started.
    case locked(String)
    /// The root cannot be created or locked: exit 4.
    case local(String)
    /// `--delete` would remove more files, or a larger share of a folder, than
    /// `--max-delete` allows (the message says which): exit 4, nothing deleted.
    case tooManyDeletions(String)
    /// A checksums file could not be fetched: exit 1 as for an item that failed with
    /// the same code (4 for a local failure such as a full disk), nothing fetched.
    case checksums(url: String, error: TransferError)

    public var errorDescription: String? {
        switch self {
        case .manifest(let error): error.errorDescription
        case .usage(let error): error.errorDescription
        case .locked(let message): message + "; try again when it finishes"
        case .local(let message): message
        case .tooManyDeletions(let message): message
        case .checksums(let url, let error):
            "cannot fetch checksums file \(Redactor.redactURLAndQuery(url)): \(Redactor.redactURLsAndQueries(in: error.message))"
        }
    }

    /// The exit class (docs/exit-codes.md#error-codes) of the report's `error.code`; a list that
    /// could not be fetched counts as an item that failed.
    public var exitCode: ExitCode {
        switch self {
        case .checksums: ExitCode.forResult(status: .failed, error: itemError)
        case .manifest, .usage, .locked, .local, .tooManyDeletions: itemError.code.exitCode
        }
    }

    /// The run-level `error` a report carries for this failure: its code says what
    /// happened (`manifest`, `usage`, `locked`, `local`, or the checksums file's own).
    public var itemError: ItemError {
        switch self {
        case .manifest: ItemError(code: .manifest, message: errorDescription ?? "")
        case .usage: ItemError(code: .usage, message: errorDescription ?? "")
        case .locked: ItemError(code: .locked, message: errorDescription ?? "")
        case .local: ItemError(code: .local, message: errorDescription ?? "")
        case .tooManyDeletions: ItemError(code: .maxDelete, message: errorDescription ?? "")
        case .checksums(_, let error): ItemError(code: error.code, message: errorDescription ?? "")
        }
    }

    /// The error the row of a list that could not be fetched carries (its set's, or a
    /// `checksums:` list's): `list`, or its host's `host_down` or `rate_limited`
    /// (docs/hosts.md#host-states), so that a dead or busy host reads the same on its lists as on
    /// its items, and exits as they do; `deadline` when `--max-duration` came first.
    var listError: ItemError {
        var error = ItemError(code: .list, message: errorDescription ?? "")
        if case .checksums(_, let cause) = self, [.hostDown, .rateLimited, .deadline, .tooSlow].contains(cause.code) {
            error.code = cause.code
        }
        return error
    }
}
