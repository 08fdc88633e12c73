extension ErrorCode {
    /// A code without its parameter, with its report spelling (`http`'s is `http_` and
    /// the status): the list of codes the compiler keeps (`CaseIterable`). A new code of
    /// `ErrorCode` needs its kind here, or `kind` and `code` do not compile; so it
    /// cannot be left out of `allCases`, of the spellings `init(rawValue:)` reads, or
    /// of the table of docs/exit-codes.md#error-codes.
    public enum Kind: String, Sendable, CaseIterable {
        case http
        case connect
        case resolve
        case timeout
        case tooSlow = "too_slow"
        case connection
        case protocolViolation = "protocol"
        case tls
        case redirect
        case notFound = "not_found"
        case range
        case transfer
        case changed
        case sizeMismatch = "size_mismatch"
        case tooLarge = "too_large"
        case checksumMismatch = "checksum_mismatch"
        case signature
        case staleRelease = "stale_release"
        case list
        case listShrunk = "list_shrunk"
        case deleteSkipped = "delete_skipped"
        case missing
        case linkMismatch = "link_mismatch"
        case diskFull = "disk_full"
        case permissionDenied = "permission_denied"
        case ioError = "io_error"
        case unsafePath = "unsafe_path"
        case curl
        case interrupted
        case manifest
        case locked
        case usage
        case local
        case maxDelete = "max_delete"
        case shardMissing = "shard_missing"
        case hostDown = "host_down"
        case rateLimited = "rate_limited"
        case deadline
    }

    /// What the code is, without its parameter.
    public var kind: Kind {
        switch self {
        case .http: .http
        case .connect: .connect
        case .resolve: .resolve
        case .timeout: .timeout
        case .tooSlow: .tooSlow
        case .connection: .connection
        case .protocolViolation: .protocolViolation
        case .tls: .tls
        case .redirect: .redirect
        case .notFound: .notFound
        case .range: .range
        case .transfer: .transfer
        case .changed: .changed
        case .sizeMismatch: .sizeMismatch
        case .tooLarge: .tooLarge
        case .checksumMismatch: .checksumMismatch
        case .signature: .signature
        case .staleRelease: .staleRelease
        case .list: .list
        case .listShrunk: .listShrunk
        case .deleteSkipped: .deleteSkipped
        case .missing: .missing
        case .linkMismatch: .linkMismatch
        case .diskFull: .diskFull
        case .permissionDenied: .permissionDenied
        case .ioError: .ioError
        case .unsafePath: .unsafePath
        case .curl: .curl
        case .interrupted: .interrupted
        case .manifest: .manifest
        case .locked: .locked
        case .usage: .usage
        case .local: .local
        case .maxDelete: .maxDelete
        case .shardMissing: .shardMissing
        case .hostDown: .hostDown
        case .rateLimited: .rateLimited
        case .deadline: .deadline
        }
    }
}

extension ErrorCode.Kind {
    /// The code of this kind; `http` as `http(404)`, standing for every status.
    public var code: ErrorCode {
        switch self {
        case .http: .http(404)
        case .connect: .connect
        case .resolve: .resolve
        case .timeout: .timeout
        case .tooSlow: .tooSlow
        case .connection: .connection
        case .protocolViolation: .protocolViolation
        case .tls: .tls
        case .redirect: .redirect
        case .notFound: .notFound
        case .range: .range
        case .transfer: .transfer
        case .changed: .changed
        case .sizeMismatch: .sizeMismatch
        case .tooLarge: .tooLarge
        case .checksumMismatch: .checksumMismatch
        case .signature: .signature
        case .staleRelease: .staleRelease
        case .list: .list
        case .listShrunk: .listShrunk
        case .deleteSkipped: .deleteSkipped
        case .missing: .missing
        case .linkMismatch: .linkMismatch
        case .diskFull: .diskFull
        case .permissionDenied: .permissionDenied
        case .ioError: .ioError
        case .unsafePath: .unsafePath
        case .curl: .curl
        case .interrupted: .interrupted
        case .manifest: .manifest
        case .locked: .locked
        case .usage: .usage
        case .local: .local
        case .maxDelete: .maxDelete
        case .shardMissing: .shardMissing
        case .hostDown: .hostDown
        case .rateLimited: .rateLimited
        case .deadline: .deadline
        }
    }
}
