import Foundation

/// Why a transfer failed, with the error code the report carries (SPEC §4, §8).
public struct TransferError: LocalizedError, Sendable, Equatable {
    /// Which exit code a failure leads to (SPEC §9).
    public enum Kind: Sendable, Equatable {
        /// Network, HTTP or the remote side: exit 1.
        case remote
        /// The local machine: disk full, permissions, an unsafe path: exit 4.
        case local
    }

    /// Stable machine-readable code: `http_404`, `timeout`, `connect`, `tls`, `size_mismatch`, `disk_full`, …
    public var code: String
    /// Human explanation, already free of secrets when it reaches a report.
    public var message: String
    public var kind: Kind
    /// Whether trying the same source again may help.
    var retryable: Bool = false
    /// Seconds the server asked us to wait (`Retry-After`).
    var retryAfter: Double?

    public init(code: String, message: String, kind: Kind = .remote) {
        self.code = code
        self.message = message
        self.kind = kind
    }

    public var errorDescription: String? { message }

    static func http(_ status: Int, url: String, retryAfter: Double? = nil) -> TransferError {
        var error = TransferError(code: "http_\(status)", message: "HTTP \(status) from \(Redactor.redactURL(url))")
        error.retryable = status >= 500 || status == 429 || status == 408
        error.retryAfter = retryAfter
        return error
    }

    static func retryable(_ code: String, _ message: String) -> TransferError {
        var error = TransferError(code: code, message: message)
        error.retryable = true
        return error
    }

    static func sizeMismatch(_ message: String) -> TransferError {
        TransferError(code: "size_mismatch", message: message)
    }

    /// A failed system call on a local file; ENOSPC and EACCES get their own codes.
    static func local(errno code: Int32, path: String, doing action: String) -> TransferError {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            return TransferError(code: "disk_full", message: "\(action) \(path): \(reason)", kind: .local)
        case EACCES, EPERM, EROFS:
            return TransferError(code: "permission_denied", message: "\(action) \(path): \(reason)", kind: .local)
        default:
            return TransferError(code: "io_error", message: "\(action) \(path): \(reason)", kind: .local)
        }
    }
}
