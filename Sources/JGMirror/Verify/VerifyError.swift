import Foundation

/// Failures of hashing what is on disk.
public enum VerifyError: LocalizedError, Sendable, Equatable {
    /// The file could not be opened or read; carries the path and the system's reason.
    case unreadable(path: String, reason: String)
    /// libcrypto could not provide a SHA-256 context.
    case noHasher

    public var errorDescription: String? {
        switch self {
        case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
        case .noHasher: "libcrypto could not create a SHA-256 context"
        }
    }
}
