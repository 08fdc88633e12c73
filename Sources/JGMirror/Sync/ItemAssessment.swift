import Foundation

/// What a sync would do with an item, decided from the disk and the state database
/// alone (SPEC §4 step 1).
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
    var partPath: String { path + ".jgpart" }
    var statePath: String { path + ".jgd" }

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
        var noState = false
        if resume {
            let hasState = listings.mayHold(statePath) && root.status(statePath) != nil
            // A part file without state (a run killed during a small file) is left to
            // `EarlierRun`, which removes it: it is not fresh.
            let hasPart = listings.mayHold(partPath) && root.status(partPath) != nil
            if hasState, hasPart { return .decided(ItemAssessment(action: .resume)) }
            noState = !hasState && !hasPart
        }
        guard listings.mayHold(path) else { return .decided(ItemAssessment(action: .fetch, noResumeState: noState)) }
        let info: stat
        do { info = try root.fileStatus(path) } catch {
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
        switch refresh {
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
            // 304 for ever (SPEC §4). It is fetched again.
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
    /// Last-Modified: the server's own validators (SPEC §4); nil when the record has
    /// neither.
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
    func assessRecordByHashing(_ recorded: String, record: FileRecord, size: Int64, stat: FileStat, root: RootDirectory) -> ItemAssessment {
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

extension Plan {
    /// The checks `sync` and `verify` make on disk before anything else (a destination
    /// that is an existing folder, resolves outside the root through a symlink, or makes
    /// too long a path), for `plan` to refuse what they would refuse.
    public func checkDestinationsOnDisk() throws(ManifestError) { _ = try RootConfinement.check(self) }
}

/// Confinement to the root through what is already on disk (SPEC §10): the
/// manifest's paths are checked lexically when parsed; here symlinks are followed.
enum RootConfinement {
    /// Throws a located manifest error for the first item whose destination, or a
    /// folder on the way to it, resolves outside the root, or (`placing`: a run that
    /// writes) that is a device, FIFO or socket. Returns what each folder held, for
    /// the run's first look at its items.
    static func check(_ plan: Plan, placing: Bool = true) throws(ManifestError) -> FolderListings {
        let root = resolvingMissing(plan.root) ?? plan.root
        var checkedFolders: [String: (inside: Bool, listing: Listing)] = [:]
        for item in plan.items {
            let folder = Paths.parent(of: item.path)
            let checked: (inside: Bool, listing: Listing)
            if let known = checkedFolders[folder] {
                checked = known
            } else {
                checked = (existingAncestorInside(folder, root: root), Listing(folder.isEmpty ? "." : folder))
                checkedFolders[folder] = checked
            }
            var escapes = !checked.inside
            var info = stat()
            if !escapes, checked.listing.mayBeOtherThanAFile(Paths.lastComponent(of: item.path)), lstat(item.path, &info) == 0 {
                switch info.st_mode & S_IFMT {
                // A link item replaces the link at its destination, never follows it; a
                // folder there fails that item alone, its contents untouched.
                case S_IFLNK where item.isLink, S_IFDIR where item.isLink: break
                case S_IFLNK: escapes = !(canonical(item.path).map { isInside($0, root) } ?? false)
                case S_IFDIR:
                    throw ManifestError(
                        file: plan.manifest.path, location: item.location,
                        message: "destination '\(item.dest)' is an existing folder under \(plan.root); a file cannot be placed there")
                case S_IFREG: break
                case _ where !placing: break  // `verify` reports it as not a regular file
                default:
                    // A device, FIFO or socket is never renamed over (`get -o /dev/null`
                    // as root would replace the system's /dev/null with a file).
                    throw ManifestError(
                        file: plan.manifest.path, location: item.location,
                        message: "destination '\(item.dest)' is \(Paths.kind(of: info.st_mode)) under \(plan.root); jgmirror replaces only regular files")
                }
            }
            if let problem = Rules.pathLengthProblem(item.path) {
                throw ManifestError(
                    file: plan.manifest.path, location: item.location,
                    message: "destination '\(Rules.abbreviated(item.dest))' under \(plan.root) \(problem)")
            }
            if escapes {
                throw ManifestError(
                    file: plan.manifest.path, location: item.location,
                    message: "destination '\(item.dest)' resolves outside the root \(plan.root) through a symlink")
            }
            // Checked here too for a plan the library built or changed, not the parser.
            if let target = item.link, case .failure(let problem) = LinkTarget.resolve(target, dest: item.dest) {
                throw ManifestError(file: plan.manifest.path, location: item.location, message: problem.message)
            }
            if let target = item.link, !linkStaysInside(target, from: folder, root: root) {
                throw ManifestError(
                    file: plan.manifest.path, location: item.location,
                    message: "link target '\(Rules.abbreviated(target))' of '\(item.dest)' resolves outside the root "
                        + "\(plan.root) through a symlink")
            }
        }
        return FolderListings(checkedFolders.mapValues(\.listing))
    }

    /// What one read of a folder says about the names in it, so that a file needs no
    /// `lstat` of its own when the folder is missing or lists it as a regular file
    /// (2000 `lstat`s cost 7–10 ms of a 2000-file sync's start), and the run's first
    /// look at an item no `stat` when the folder lacks its names.
    enum Listing {
        /// The folder does not exist (yet): nothing in it can be a symlink or a folder.
        case missing
        /// `others`: the names that are not known to be regular files (symlinks,
        /// folders, and entries whose type the file system does not give); `names`:
        /// every name's `nameHash` (a folder of 100,000 files costs about a megabyte,
        /// and a collision only costs a `stat`), nil when a name is not ASCII.
        case read(others: Set<String>, names: Set<Int>?)
        /// The folder could not be read: every name is checked on its own.
        case unread

        init(_ folder: String) {
            guard let directory = opendir(folder) else {
                let failure = errno
                self = failure == ENOENT || failure == ENOTDIR ? .missing : .unread
                return
            }
            defer { closedir(directory) }
            var others = Set<String>()
            var names: Set<Int>? = []
            errno = 0
            while let entry = readdir(directory) {
                withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    let bytes = raw.bindMemory(to: UInt8.self)
                    let name = UnsafeBufferPointer(rebasing: bytes[..<strnlen(raw.baseAddress!, raw.count)])
                    guard !name.elementsEqual(".".utf8), !name.elementsEqual("..".utf8) else { return }
                    if names != nil {
                        if let hash = Self.nameHash(name) { names?.insert(hash) } else { names = nil }
                    }
                    if entry.pointee.d_type != UInt8(DT_REG) { others.insert(String(decoding: name, as: UTF8.self)) }
                }
            }
            // A read that failed part-way (`errno` set at the end) lists nothing for sure.
            self = errno == 0 ? .read(others: others, names: names) : .unread
        }

        /// A hash of a name's bytes with ASCII letters folded to lower case, so that a
        /// folder on a case-insensitive file system (APFS, vfat, a casefold ext4
        /// folder) holding `README` is not taken to lack `Readme`; nil for a name with
        /// a byte past ASCII, which such a file system may fold its own way.
        static func nameHash(_ bytes: some Sequence<UInt8>) -> Int? {
            var hasher = Hasher()
            for byte in bytes {
                guard byte < 0x80 else { return nil }
                hasher.combine(TextSearch.lowerASCII(byte))
            }
            return hasher.finalize()
        }

        func mayBeOtherThanAFile(_ name: String) -> Bool {
            switch self {
            case .missing: false
            case .read(let others, _): others.contains(name)
            case .unread: true
            }
        }

        /// False only when the folder surely lacked `name` when it was read.
        func mayHold(_ name: String) -> Bool {
            switch self {
            case .missing: false
            case .read(_, let names): names.map { names in Self.nameHash(name.utf8).map(names.contains) ?? true } ?? true
            case .unread: true
            }
        }
    }

    /// Whether `target`, read from a link in `folder`, stays inside `root` once the
    /// symlinks on disk along it are followed (the parser has checked it lexically).
    private static func linkStaysInside(_ target: String, from folder: String, root: String) -> Bool {
        guard let resolved = resolvingMissing(folder + "/" + target) else { return true }
        return isInside(resolved, root)
    }

    /// Whether `folder` stays inside `root` once the symlinks among its existing
    /// folders are followed. Folders not made yet cannot lead anywhere, so a root
    /// that does not exist yet (the first run) holds everything below it.
    private static func existingAncestorInside(_ folder: String, root: String) -> Bool {
        guard let resolved = resolvingMissing(folder) else { return true }
        return isInside(resolved, root)
    }

    /// `path` with its deepest existing folder resolved by `realpath` and the names
    /// below it, which do not exist yet, appended as written (`.` dropped, `..`
    /// taking one name back); nil when not even `/` resolves.
    static func resolvingMissing(_ path: String) -> String? {
        var missing: [Substring] = []
        var current = path
        while true {
            if let resolved = canonical(current.isEmpty ? "." : current) {
                var names = resolved.split(separator: "/", omittingEmptySubsequences: true)
                for name in missing.reversed() {
                    if name == ".." { if !names.isEmpty { names.removeLast() } } else if name != "." && !name.isEmpty { names.append(name) }
                }
                return "/" + names.joined(separator: "/")
            }
            guard let slash = current.lastIndex(of: "/") else {
                missing.append(Substring(current))
                current = ""
                continue
            }
            missing.append(current[current.index(after: slash)...])
            if slash == current.startIndex { current = "/" } else { current = String(current[..<slash]) }
            if current == "/" && canonical("/") == nil { return nil }
        }
    }

    static func isInside(_ path: String, _ root: String) -> Bool {
        path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }

    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// What each folder of a plan held when `RootConfinement.check` read it. A name it
/// lacked then is taken as absent when the run first looks at its item, instead of
/// a `stat` each: a file made in between by another process is a race the `stat`
/// had too (it could come just after), and the rename onto it is the same.
struct FolderListings: Sendable {
    private let listings: [String: RootConfinement.Listing]

    /// No listing: every name may be there.
    init() { listings = [:] }

    init(_ listings: [String: RootConfinement.Listing]) { self.listings = listings }

    /// False only when `path`'s folder surely lacked it.
    func mayHold(_ path: String) -> Bool {
        listings[Paths.parent(of: path)]?.mayHold(Paths.lastComponent(of: path)) ?? true
    }
}
