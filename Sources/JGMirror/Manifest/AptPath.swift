/// The rule for every path an apt repository names — a file Release lists, a
/// Packages `Filename`, a Sources `Directory` and its files: a path inside the
/// repository exactly as written, or refused. Nothing is normalised: a signed index
/// that says `pool/../x` is refused, not read as `x`, so two spellings can never
/// name one destination.
enum AptPath {
    /// Why `path` cannot be mirrored, or nil: it must be relative, with no empty, `.`
    /// or `..` segment, no control character or backslash, no name jgmirror keeps
    /// for itself (`.jgmirror`, `*.jgpart`…), and names a file system takes
    /// (docs/safety.md#confinement-to-the-root).
    static func problem(_ path: String) -> String? {
        if path.isEmpty { return "is empty" }
        if path.hasPrefix("/") { return "is absolute; paths in an apt repository are relative to its base" }
        if path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }) {
            return "contains a control character or a backslash"
        }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            switch segment {
            case "": return "has an empty segment ('//' or a trailing '/')"
            case ".", "..": return "has a '\(segment)' segment; it must name its file directly"
            default: if DestinationPath.isReserved(segment) { return "uses a name jgmirror keeps for itself" }
            }
        }
        if let problem = DestinationPath.lengthProblem(path) { return problem.message }
        return nil
    }

    /// Whether `name` is one file name (no `/`) that `problem` accepts.
    static func isFileName(_ name: String) -> Bool {
        !name.contains("/") && problem(name) == nil
    }
}
