import Foundation

/// What a sync would do with an item, decided from the disk and the state database
/// alone (docs/sync.md#unchanged-files).
public enum ItemAction: String, Sendable {
    /// Not on disk, or stale: fetch it.
    case fetch
    /// Resume state exists: continue from it.
    case resume
    /// On disk with the right SHA-256.
    case unchanged
    /// On disk, but the manifest has no checksum to compare (`refresh: never`).
    case present
    /// On disk without a checksum: a conditional request decides (`refresh: conditional`).
    case check
    /// A `link:` item whose symlink is missing or points elsewhere: placed after the files.
    case link
}

/// An item's action and what was learned deciding it.
public struct ItemAssessment: Sendable {
    public var action: ItemAction
    /// SHA-256 of the file on disk, when it was hashed or the state database vouches for it.
    public var sha256: String?
    /// SHA-512 of the file on disk, when the item names one and it was hashed.
    public var sha512: String?
    /// Its length, when it exists.
    public var size: Int64?
    /// No resume state and no part file were found, so a fetch may start anew without
    /// looking (and hold a small body in memory, `TransferRequest.opensPartLazily`).
    var noResumeState = false
    /// The destination's stat, when it exists.
    var stat: FileStat?
    /// Decided by the state database's record, without reading the file.
    var quick = false
    /// `check`: the conditional request's header lines.
    var conditions: [String] = []
    /// `check`: the record still describes the file, so its SHA-256 and validators hold.
    var recordHolds = false
    /// `check`: the file was hashed this run to settle a racy record (nanoseconds, taken
    /// before reading), and matched it.
    var hashedAt: Int64?
}

/// How far a state record is trusted: not at all under `--rehash`, else up to the
/// file system's timestamp granularity around the moment it was taken.
struct QuickCheck: Sendable {
    /// Records vouch for unchanged files.
    var enabled = true
    /// Timestamps this close to the recording moment are racy (nanoseconds).
    var racyWindowNs: Int64 = 2_000_000_000
}

extension PlannedItem {
    static let partSuffix = ".jgpart"
    static let stateSuffix = ".jgd"
    var partPath: String { path + Self.partSuffix }
    var statePath: String { path + Self.stateSuffix }

    /// Decides the action; hashes the destination when it exists, a checksum is known
    /// and `record` cannot vouch for it. A destination reached through a symlink below
    /// the root counts as absent.
    public func assess(resume: Bool = true, record: FileRecord? = nil) -> ItemAssessment {
        if let link {
            // Nothing is fetched or hashed: the link is right, or it is placed.
            let root = try? RootDirectory(path: root)
            let current = root.flatMap { try? $0.linkTarget(path) }
            return ItemAssessment(action: current == link ? .unchanged : .link)
        }
        guard let root = try? RootDirectory(path: root) else { return ItemAssessment(action: .fetch) }
        switch inspect(resume: resume, root: root, record: record, quickCheck: QuickCheck()) {
        case .decided(let assessment): return assessment
        case .needsHashing(let size, let stat): return assessByHashing(size: size, stat: stat, root: root, record: record)
        case .unsafe: return ItemAssessment(action: .fetch)
        }
    }

    /// What the disk and the record say without reading any file.
    enum Inspection {
        case decided(ItemAssessment)
        /// The destination exists with a plausible size; only its hash can decide (against
        /// the checksum, or for an item without one against the record's SHA-256).
        case needsHashing(size: Int64, stat: FileStat)
        /// The destination or a folder on the way to it is a symlink (`unsafe_path`).
        case unsafe(TransferError)
    }

    /// Looks at the destination and its resume files through `root`, following no
    /// symlink, and at the state database's `record` of it.
    /// `listings` tells which names the folder surely lacks, so that a first run
    /// stats nothing.
    /// The record is looked up only for a destination that is there.
    func inspect(
        resume: Bool, root: RootDirectory, record lookUp: @autoclosure () -> FileRecord? = nil,
        quickCheck: QuickCheck = QuickCheck(), listings: FolderListings = FolderListings()
    ) -> Inspection {
        inspect(resume: resume, files: RootDirectory.Cursor(root), record: lookUp(), quickCheck: quickCheck, listings: listings)
    }

    /// `inspect`, looking at the disk through `files`, which keeps the last folder open
    /// for the next item in it (a walk's).
    func inspect(
        resume: Bool, files: RootDirectory.Cursor, record lookUp: @autoclosure () -> FileRecord? = nil,
        quickCheck: QuickCheck = QuickCheck(), listings: FolderListings = FolderListings()
    ) -> Inspection {
        let path = self.path  // built once: a walk asks this for every item
        let names = listings.names(at: path)
        var noState = false
        if resume {
            let hasState = names.mayHold(suffix: Self.stateSuffix) && files.status(statePath) != nil
            // A part file without state (a run killed during a small file) is left to
            // `EarlierRun`, which removes it: it is not fresh.
            let hasPart = names.mayHold(suffix: Self.partSuffix) && files.status(partPath) != nil
            if hasState, hasPart { return .decided(ItemAssessment(action: .resume)) }
            noState = !hasState && !hasPart
        }
        guard names.mayHold() else { return .decided(ItemAssessment(action: .fetch, noResumeState: noState)) }
        let info: stat
        do { info = try files.fileStatus(path) } catch {
            return error.code == .unsafePath ? .unsafe(error) : .decided(ItemAssessment(action: .fetch, noResumeState: noState))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .decided(ItemAssessment(action: .fetch, noResumeState: noState))
        }
        let current = FileStat(info)
        let size = current.size
        let record = lookUp()
        if let expected = self.size, expected != size {
            return .decided(ItemAssessment(action: .fetch, size: size, noResumeState: noState, stat: current))
        }
        if hasChecksum {
            // The record vouches for the digest hashing would check: SHA-512 when the item has one.
            if quickCheck.enabled, let record,
                record.vouches(for: current, sha256: sha256, sha512: sha512, racyWindowNs: quickCheck.racyWindowNs)
            {
                return .decided(
                    ItemAssessment(
                        action: .unchanged, sha256: sha256, sha512: sha512, size: size, stat: current, quick: true))
            }
            return .needsHashing(size: size, stat: current)
        }
        return refreshing(size: size, stat: current, record: record, noState: noState, quickCheck: quickCheck)
    }

    /// What an item without a checksum whose file is there does, by its `refresh`: the
    /// file stays, is fetched again, or is asked for conditionally with the server's
    /// validators the record keeps (docs/sync.md#unchanged-files).
    private func refreshing(size: Int64, stat current: FileStat, record: FileRecord?, noState: Bool, quickCheck: QuickCheck)
        -> Inspection
    {
        switch options.refresh {
        case .never:
            return .decided(ItemAssessment(action: .present, size: size, stat: current))
        case .always:
            return .decided(ItemAssessment(action: .fetch, size: size, noResumeState: noState, stat: current))
        case .conditional:
            // Validators recorded for another URL say nothing about this one (an item
            // moved to a new release): asked with them, or by the file's own mtime, a
            // server would call the new file not modified.
            if let record, !record.isFor(url: displayURL) {
                return .decided(ItemAssessment(action: .fetch, size: size, noResumeState: noState, stat: current))
            }
            let describes = record?.describes(current, racyWindowNs: quickCheck.racyWindowNs) ?? false
            if let record, !describes || (!quickCheck.enabled && record.sha256 != nil) {
                // A file the record does not vouch for (changed since, recorded moments
                // after it was written as every placement is, or `--rehash`) is hashed:
                // the SHA-256 of the bytes placed decides whether the recorded validators
                // still describe it. One that differs was changed here, and is fetched
                // again; so is one that changed since a record without a hash (a file
                // found in place and kept by a `304`).
                guard record.sha256 != nil, record.stat.size == size else {
                    return .decided(ItemAssessment(action: .fetch, size: size, noResumeState: noState, stat: current))
                }
                return .needsHashing(size: size, stat: current)
            }
            // Past those checks the record vouches for the file. Without a record, or
            // one without the server's validators, there is nothing to ask with: the
            // file's own mtime is when jgmirror placed it, not a server time, and a
            // replacement published with an older one (`rsync -t`) would be answered
            // 304 for ever (docs/sync.md#unchanged-files). It is fetched again.
            guard let record, let conditions = Self.conditions(record: record) else {
                return .decided(ItemAssessment(action: .fetch, size: size, noResumeState: noState, stat: current))
            }
            var assessment = ItemAssessment(action: .check, size: size, noResumeState: noState, stat: current)
            assessment.recordHolds = true
            assessment.sha256 = record.sha256
            assessment.conditions = conditions
            return .decided(assessment)
        }
    }

    /// `If-None-Match` with a strong ETag, else `If-Modified-Since` with the recorded
    /// Last-Modified: the server's own validators (docs/sync.md#unchanged-files); nil when the
    /// record has neither.
    static func conditions(record: FileRecord) -> [String]? {
        if let etag = record.etag, !etag.hasPrefix("W/") { return ["If-None-Match: \(etag)"] }
        if let lastModified = record.lastModified { return ["If-Modified-Since: \(lastModified)"] }
        return nil
    }

    func assessByHashing(size: Int64, stat: FileStat? = nil, root: RootDirectory, record: FileRecord? = nil) -> ItemAssessment {
        if !hasChecksum, let record, let recorded = record.sha256, let stat {
            return assessRecordByHashing(recorded, record: record, size: size, stat: stat, root: root)
        }
        guard hasChecksum, let fd = try? root.openFile(path, flags: O_RDONLY | O_NONBLOCK) else {
            return ItemAssessment(action: .fetch, size: size, stat: stat)
        }
        defer { close(fd) }
        guard let digests = try? checkDigests(fd: fd) else { return ItemAssessment(action: .fetch, size: size, stat: stat) }
        return ItemAssessment(
            action: digests.mismatch == nil ? .unchanged : .fetch, sha256: digests.sha256, sha512: digests.sha512, size: size,
            stat: stat)
    }

    /// Hashes the open file `fd` for each digest the item names, SHA-256 then SHA-512
    /// (lists can give both), until one differs: what each came to, and the first
    /// difference as reports say it. `sync`'s look at a present file and `verify` both ask.
    func checkDigests(fd: Int32) throws(VerifyError) -> (sha256: String?, sha512: String?, mismatch: String?) {
        var found: (sha256: String?, sha512: String?, mismatch: String?) = (nil, nil, nil)
        for (algorithm, name, expected) in [(SHA256.Algorithm.sha256, "SHA-256", sha256), (.sha512, "SHA-512", sha512)] {
            guard let expected, found.mismatch == nil else { continue }
            let actual = try FileHasher.hex(fd: fd, path: path, algorithm: algorithm)
            if algorithm == .sha256 { found.sha256 = actual } else { found.sha512 = actual }
            if actual != expected { found.mismatch = "\(name) is \(actual), expected \(expected)" }
        }
        return found
    }
}

extension PlannedItem {
    /// An item without a checksum whose record does not vouch for the file: hashed,
    /// and the record's validators used when the file still has the recorded SHA-256;
    /// otherwise the file is fetched again.
    func assessRecordByHashing(_ recorded: String, record: FileRecord, size: Int64, stat: FileStat, root: RootDirectory)
        -> ItemAssessment
    {
        let hashedAt = FileRecord.now()
        let actual = (try? root.openFile(path, flags: O_RDONLY | O_NONBLOCK)).flatMap { fd -> String? in
            defer { close(fd) }
            return try? FileHasher.sha256(fd: fd, path: path)
        }
        // Not the bytes placed (or unreadable): changed here since, so fetched again;
        // so is a file whose record has no validators to ask with.
        guard actual == recorded, let conditions = Self.conditions(record: record) else {
            return ItemAssessment(action: .fetch, size: size, stat: stat)
        }
        var assessment = ItemAssessment(action: .check, size: size, stat: stat)
        assessment.recordHolds = true
        assessment.sha256 = recorded
        assessment.hashedAt = hashedAt
        assessment.conditions = conditions
        return assessment
    }
}
