import Foundation

extension Plan {
    /// The checks `sync` and `verify` make on disk before anything else (a destination
    /// that is an existing folder, resolves outside the root through a symlink, or makes
    /// too long a path), for `plan` to refuse what they would refuse.
    public func checkDestinationsOnDisk() throws(ManifestError) { _ = try RootConfinement.check(self) }
}

/// Confinement to the root through what is already on disk
/// (docs/safety.md#confinement-to-the-root): the manifest's paths are checked lexically when
/// parsed; here symlinks are followed.
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
                case S_IFLNK: escapes = !(Paths.canonical(item.path).map { isInside($0, root) } ?? false)
                case S_IFDIR:
                    throw ManifestError(
                        file: plan.manifest.path, location: item.location,
                        message:
                            "destination '\(item.dest)' is an existing folder under \(plan.root); a file cannot be placed there")
                case S_IFREG: break
                case _ where !placing: break  // `verify` reports it as not a regular file
                default:
                    // A device, FIFO or socket is never renamed over (`get -o /dev/null`
                    // as root would replace the system's /dev/null with a file).
                    throw ManifestError(
                        file: plan.manifest.path, location: item.location,
                        message:
                            "destination '\(item.dest)' is \(Paths.kind(of: info.st_mode)) under \(plan.root); jgmirror replaces only regular files"
                    )
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
        }
        try checkLinksTogether(plan)
        return FolderListings(checkedFolders.mapValues(\.listing))
    }

    /// The plan's links together, as the parser judges a manifest's (`LinkResolver`,
    /// nothing on disk): for a plan the library built or changed. What the links on
    /// disk add is judged when the links are placed (`ItemRunner.placeLinks`).
    private static func checkLinksTogether(_ plan: Plan) throws(ManifestError) {
        let links = plan.items.filter(\.isLink)
        guard !links.isEmpty else { return }
        var resolver = LinkResolver(planned: [:], folders: Set(plan.manifest.snapshotSets.map(\.scope)))
        for item in links { resolver.planned[item.dest] = item.link }
        for item in links {
            if let problem = resolver.problem(item.link ?? "", of: item.dest) {
                throw ManifestError(file: plan.manifest.path, location: item.location, message: problem)
            }
        }
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
        /// every name's `NameHash` (a folder of 100,000 files costs about a megabyte,
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
                        if let hash = NameHash(name)?.value { names?.insert(hash) } else { names = nil }
                    }
                    if entry.pointee.d_type != UInt8(DT_REG) { others.insert(String(decoding: name, as: UTF8.self)) }
                }
            }
            // A read that failed part-way (`errno` set at the end) lists nothing for sure.
            self = errno == 0 ? .read(others: others, names: names) : .unread
        }

        func mayBeOtherThanAFile(_ name: String) -> Bool {
            switch self {
            case .missing: false
            case .read(let others, _): others.contains(name)
            case .unread: true
            }
        }

        /// False only when the folder surely lacked the name `hash` stands for when it
        /// was read (nil: a name past ASCII, which may be there).
        func mayHold(_ hash: NameHash?) -> Bool {
            switch self {
            case .missing: false
            case .read(_, let names): names.map { names in hash.map { names.contains($0.value) } ?? true } ?? true
            case .unread: true
            }
        }
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
            if let resolved = Paths.canonical(current.isEmpty ? "." : current) {
                var names = resolved.split(separator: "/", omittingEmptySubsequences: true)
                for name in missing.reversed() {
                    if name == ".." {
                        if !names.isEmpty { names.removeLast() }
                    } else if name != "." && !name.isEmpty {
                        names.append(name)
                    }
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
            if current == "/" && Paths.canonical("/") == nil { return nil }
        }
    }

    static func isInside(_ path: String, _ root: String) -> Bool {
        path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
