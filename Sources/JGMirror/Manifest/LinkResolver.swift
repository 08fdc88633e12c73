/// Where the target of a `link:` item leads a reader, resolved name by name as the
/// kernel resolves it: through the links the same run places and through the
/// symlinks already on disk (docs/safety.md#links). `LinkTarget` judges a target on
/// its own, lexically; two links can still lead out together (`up -> ..` beside
/// `esc -> up/..`), and so can one link through a symlink on disk.
///
/// Pure: what is on disk comes from `disk`, so the manifest's parser judges the
/// manifest's links alone (nothing on disk), and a run judges them with the tree.
struct LinkResolver {
    /// Where a target leads.
    enum Outcome: Equatable {
        /// A path below the root (`""`: the root itself).
        case inside(String)
        /// Above the root, or anywhere through an absolute symlink that leaves it.
        case outside
        /// Into the root's state folder (`.jgmirror`).
        case stateFolder
        /// More than `maxHops` links on the way: a reader gets `ELOOP`, nothing else.
        case loop
    }

    /// As Linux's `MAXSYMLINKS`.
    static let maxHops = 40

    /// The links a run places, by destination: they stand for whatever is on disk there.
    var planned: [String: String]
    /// Paths taken as folders whatever is on disk: the folders of sets published as
    /// snapshots of their own, links that jgmirror swaps and whose targets are its own.
    var folders: Set<String> = []
    /// The root's absolute path, to read an absolute symlink on disk against.
    var root = ""
    /// The target of the symlink at a path below the root, or nil for anything else.
    var disk: (String) -> String? = { _ in nil }

    /// Where `target`, read from a link at `dest`, leads; `via` collects the links it
    /// went through (their destinations), for the message that refuses it.
    func resolve(_ target: String, from dest: String, via: inout [String]) -> Outcome {
        var resolved = Paths.parent(of: dest).split(separator: "/").map(String.init)
        var pending = Self.names(target)
        var hops = 0
        while !pending.isEmpty {
            let name = pending.removeFirst()
            if name == "." { continue }
            if name == ".." {
                guard !resolved.isEmpty else { return .outside }
                resolved.removeLast()
                continue
            }
            resolved.append(name)
            let path = resolved.joined(separator: "/")
            if folders.contains(path) { continue }
            guard let link = planned[path] ?? disk(path) else { continue }
            hops += 1
            guard hops <= Self.maxHops else { return .loop }
            via.append(path)
            resolved.removeLast()
            if link.hasPrefix("/") {
                guard !root.isEmpty, link == root || link.hasPrefix(root + "/") else { return .outside }
                resolved = []
                pending = Self.names(String(link.dropFirst(root.count))) + pending
            } else {
                pending = Self.names(link) + pending
            }
        }
        return resolved.first == Paths.stateFolder ? .stateFolder : .inside(resolved.joined(separator: "/"))
    }

    /// Why the link at `dest` to `target` may not be placed, or nil: it leads outside
    /// the root or into the state folder once the links on its way are followed.
    func problem(_ target: String, of dest: String) -> String? {
        var via: [String] = []
        let outcome = resolve(target, from: dest, via: &via)
        let through = via.last.map { " through the link '\(Rules.abbreviated($0))'" } ?? ""
        let link = "link target '\(Rules.abbreviated(target))' of '\(Rules.abbreviated(dest))'"
        switch outcome {
        case .inside, .loop: return nil
        case .outside: return "\(link) leaves the root\(through)"
        case .stateFolder: return "\(link) leads into jgmirror's state folder \(Paths.stateFolder)\(through)"
        }
    }

    private static func names(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }
}
