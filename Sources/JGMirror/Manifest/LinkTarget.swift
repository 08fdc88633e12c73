/// Lexical rules for the target of a `link:` item (docs/manifest.md#link-items,
/// docs/safety.md#links): written as given into the symlink, so it must be relative, and once
/// resolved against the link's folder it must stay inside the root. Pure: what is on disk is
/// checked by `RootConfinement` before a run.
enum LinkTarget {
    /// Why a target is refused, for the person at the terminal.
    enum Problem: Error, Equatable {
        case empty
        case absolute(String)
        case invalid(String)
        case escapes(String, dest: String)
        case itself(String, dest: String)
        case stateFolder(String)

        var message: String {
            switch self {
            case .empty: "'link' is empty; give the relative path the link points at"
            case .absolute(let target):
                "link target '\(Rules.abbreviated(target))' is absolute; it must be relative to the link's folder, "
                    + "so the mirror stays whole when moved"
            case .invalid(let target): "link target '\(Rules.printable(target))' contains a control character"
            case .escapes(let target, let dest):
                "link target '\(Rules.abbreviated(target))' of '\(Rules.abbreviated(dest))' leaves the root"
            case .itself(let target, let dest):
                "link target '\(Rules.abbreviated(target))' of '\(Rules.abbreviated(dest))' points at the link itself"
            case .stateFolder(let target):
                "link target '\(Rules.abbreviated(target))' points into jgmirror's state folder \(Paths.stateFolder)"
            }
        }
    }

    /// The path below the root that `target` names from a link at `dest` (both
    /// relative; `dest` normalised), with `.` and `..` resolved lexically: `""` is the
    /// root itself. A target that is absolute, climbs above the root, or names the link
    /// itself (or something below it) is refused.
    static func resolve(_ target: String, dest: String) -> Result<String, Problem> {
        if target.isEmpty { return .failure(.empty) }
        // `~` is not expanded by the kernel, but a reader's shell would: refused as absolute.
        if target.hasPrefix("/") || target.hasPrefix("~") { return .failure(.absolute(target)) }
        if target.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) { return .failure(.invalid(target)) }
        var names = Paths.parent(of: dest).split(separator: "/").map(String.init)
        for name in target.split(separator: "/", omittingEmptySubsequences: true) {
            switch name {
            case ".": continue
            case "..":
                guard !names.isEmpty else { return .failure(.escapes(target, dest: dest)) }
                names.removeLast()
            default: names.append(String(name))
            }
        }
        let resolved = names.joined(separator: "/")
        if resolved == dest || resolved.hasPrefix(dest + "/") { return .failure(.itself(target, dest: dest)) }
        if names.first == Paths.stateFolder { return .failure(.stateFolder(target)) }
        return .success(resolved)
    }
}
