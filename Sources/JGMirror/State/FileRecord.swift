import Foundation

/// What the state database remembers about one destination (docs/state.md#the-state-folder).
public struct FileRecord: Sendable, Equatable {
    /// The destination, relative to the root.
    public var dest: String
    /// The file's stat when it was last verified (or checked, for a file never hashed).
    public var stat: FileStat
    /// The SHA-256 the file had when `verifiedAt` was taken; nil when it was never hashed.
    public var sha256: String?
    /// The SHA-512 the file had when `verifiedAt` was taken, when one was computed (an
    /// item that names a `sha512:`); nil otherwise.
    public var sha512: String?
    public var etag: String?
    public var lastModified: String?
    /// The URL the bytes came from (redacted of credentials).
    public var url: String?
    /// `url`'s `StableHash`, where only that is kept (`RecordTable`).
    var urlHash: UInt64?
    /// When `sha256` was computed over a file with `stat`, nanoseconds since the epoch.
    /// For a file this tool placed and saw the file system's clock pass
    /// (`RecordSettling`), the moment its timestamps leave the racy window instead,
    /// which may lie up to that window after the record was written.
    public var verifiedAt: Int64?
    /// When the remote was last asked (or the record last written), nanoseconds.
    public var checkedAt: Int64

    public init(
        dest: String, stat: FileStat, sha256: String?, sha512: String? = nil, etag: String? = nil, lastModified: String? = nil,
        url: String? = nil, verifiedAt: Int64?, checkedAt: Int64
    ) {
        self.dest = dest
        self.stat = stat
        self.sha256 = sha256
        self.sha512 = sha512
        self.etag = etag
        self.lastModified = lastModified
        self.url = url
        self.verifiedAt = verifiedAt
        self.checkedAt = checkedAt
    }

    /// Whether the record was written for `url` (an item's `displayURL`); one that
    /// keeps neither the URL nor its hash is taken to be.
    func isFor(url other: String) -> Bool {
        if let url { return url == other }
        if let urlHash { return urlHash == StableHash.fnv1a64(other) }
        return true
    }

    /// Whether this record proves, without reading the file, that a file with stat
    /// `current` has the item's checksum (docs/state.md#the-quick-check): its SHA-512 when the
    /// item names one (the digest hashing would check), else its SHA-256.
    ///
    /// A timestamp within `racyWindowNs` of the moment the record was taken is not
    /// trusted (git's "racy" rule): a write in the same clock tick after the stat
    /// would leave every field as recorded. Such a file is hashed, and recording it
    /// again then makes it trusted.
    public func vouches(
        for current: FileStat, sha256 expected256: String?, sha512 expected512: String? = nil, racyWindowNs: Int64
    ) -> Bool {
        guard current == stat, let verifiedAt, expected256 != nil || expected512 != nil else { return false }
        // Each digest the item names must be the one on record (lists can give both).
        if let expected512 {
            guard let sha512, sha512 == expected512 else { return false }
        }
        if let expected256 {
            guard let sha256, sha256 == expected256 else { return false }
        }
        return !Self.isRacy(current, recordedAt: verifiedAt, windowNs: racyWindowNs)
    }

    /// Whether the recorded validators still describe a file with stat `current`: the
    /// file is the one the record was written for, and not racily so.
    public func describes(_ current: FileStat, racyWindowNs: Int64) -> Bool {
        current == stat && !Self.isRacy(current, recordedAt: verifiedAt ?? checkedAt, windowNs: racyWindowNs)
    }

    /// A file whose newest timestamp is within `windowNs` of (or after) `recordedAt`.
    static func isRacy(_ stat: FileStat, recordedAt: Int64, windowNs: Int64) -> Bool {
        max(stat.mtimeNs, stat.ctimeNs) > recordedAt - windowNs
    }

    /// The current time in nanoseconds since the epoch (the clock file timestamps use).
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
