import Foundation

/// Why a transfer failed, with the error code the report carries (docs/sync.md#failures,
/// docs/exit-codes.md#error-codes).
public struct TransferError: LocalizedError, Sendable, Equatable {
    /// What failed, as the report spells it; it also decides the exit code
    /// (docs/exit-codes.md#error-codes).
    public var code: ErrorCode
    /// Human explanation, already free of secrets when it reaches a report.
    public var message: String
    /// Whether trying the same source again may help.
    var retryable: Bool = false
    /// Seconds the server asked us to wait (`Retry-After`).
    var retryAfter: Double?

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    public var errorDescription: String? { message }

    static func http(_ status: Int, url: String, retryAfter: Double? = nil) -> TransferError {
        var error = TransferError(code: .http(status), message: "HTTP \(status) from \(Redactor.redactURL(url))")
        error.retryable = status >= 500 || status == 429 || status == 408
        error.retryAfter = retryAfter
        return error
    }

    static func retryable(_ code: ErrorCode, _ message: String) -> TransferError {
        var error = TransferError(code: code, message: message)
        error.retryable = true
        return error
    }

    static func sizeMismatch(_ message: String) -> TransferError {
        TransferError(code: .sizeMismatch, message: message)
    }

    /// More bytes than `max_size` allows: the item fails at once, never retried.
    static func tooLarge(_ message: String) -> TransferError {
        TransferError(code: .tooLarge, message: message)
    }

    /// A failed system call on a local file; ENOSPC and EACCES get their own codes.
    static func local(errno code: Int32, path: String, doing action: String) -> TransferError {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            return TransferError(code: .diskFull, message: "\(action) \(path): \(reason)")
        case EACCES, EPERM, EROFS:
            return TransferError(code: .permissionDenied, message: "\(action) \(path): \(reason)")
        default:
            return TransferError(code: .ioError, message: "\(action) \(path): \(reason)")
        }
    }
}
