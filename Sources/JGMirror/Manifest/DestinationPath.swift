import Foundation

/// Lexical rules for destinations (docs/manifest.md#destinations,
/// docs/safety.md#confinement-to-the-root): relative, inside the root, and never one of jgmirror's
/// own working names.
enum DestinationPath {
    /// Why a destination is refused.
    enum Problem: Error {
        case absolute(String)
        case escapes(String)
        case empty
        case noFileName(String)
        case reserved(String)
        case invalid(String)
        case nameTooLong(String, bytes: Int, limit: Int)

        var message: String {
            switch self {
            case .absolute(let dest) where dest.hasPrefix("~"):
                "destination '\(Rules.abbreviated(dest))' starts with '~', which jgmirror does not expand; it must be relative to the root"
            case .absolute(let dest): "destination '\(Rules.abbreviated(dest))' is absolute; it must be relative to the root"
            case .escapes(let dest): "destination '\(Rules.abbreviated(dest))' leaves the root"
            case .empty: "destination is empty"
            case .noFileName(let url):
                "cannot take a file name from URL '\(Rules.abbreviated(Redactor.redactURLAndQuery(url)))'; give 'dest' a file name"
            case .reserved(let dest):
                "destination '\(Rules.abbreviated(dest))' uses a name jgmirror reserves (.jgpart, .jgd, .jgbad, or the state folder .jgmirror)"
            case .invalid(let dest): "destination '\(Rules.printable(dest))' contains a control character"
            case .nameTooLong(let name, let bytes, let limit):
                "destination name '\(Rules.abbreviated(name))' is \(bytes) bytes long; file systems take \(limit) "
                    + "(the last name of a destination leaves room for the .jgpart and .jgd.tmp jgmirror adds)"
            }
        }
    }

    static let reservedSuffixes = [".jgpart", ".jgd", ".jgbad", Rules.longestWorkingSuffix]
    /// The longest last name: room is left for the longest suffix jgmirror appends.
    static let maxLastNameLength = Rules.maxNameLength - Rules.longestWorkingSuffix.utf8.count

    /// Whether `name` is one of jgmirror's working names. Refused for folders too: a
    /// folder `x.jgpart` would stand where the part file of `x` must go.
    static func isReserved(_ name: Substring) -> Bool {
        name == Paths.stateFolder || reservedSuffixes.contains(where: { name.hasSuffix($0) })
    }

    /// The first component longer than a file system takes, if any.
    static func lengthProblem(_ path: String) -> Problem? {
        let parts = path.split(separator: "/")
        for (index, part) in parts.enumerated() {
            let limit = index == parts.count - 1 ? maxLastNameLength : Rules.maxNameLength
            if part.utf8.count > limit { return .nameTooLong(String(part), bytes: part.utf8.count, limit: limit) }
        }
        return nil
    }

    /// The normalised relative path for `dest` (nil or a trailing `/` takes the URL's file name).
    static func normalize(_ dest: String?, url: String) -> Result<String, Problem> {
        var raw = dest ?? ""
        if raw.isEmpty || raw.hasSuffix("/") {
            guard let name = fileName(of: url) else { return .failure(.noFileName(url)) }
            raw += name
        }
        // `~` is refused where the manifest wrote it (a home folder jgmirror does not
        // expand), not in a file name taken from the URL.
        if raw.hasPrefix("/") || dest?.hasPrefix("~") == true { return .failure(.absolute(raw)) }
        if raw.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) { return .failure(.invalid(raw)) }
        // Already normal (no empty, '.' or '..' segment): most manifests, checked on bytes.
        if !raw.hasPrefix("."), !raw.contains(ascii: "//"), !raw.contains(ascii: "/."), !raw.hasSuffix("/") {
            // One pass over the bytes finds the names ending in a reserved suffix ('.j'…).
            if raw.contains(ascii: ".j"), raw.split(separator: "/").contains(where: isReserved) {
                return .failure(.reserved(raw))
            }
            if raw.utf8.count > maxLastNameLength, let problem = lengthProblem(raw) { return .failure(problem) }
            return .success(raw)
        }
        var parts: [Substring] = []
        for part in raw.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                if parts.isEmpty { return .failure(.escapes(raw)) }
                parts.removeLast()
            default: parts.append(part)
            }
        }
        guard !parts.isEmpty else { return .failure(.empty) }
        if parts.contains(where: isReserved) { return .failure(.reserved(raw)) }
        let normal = parts.joined(separator: "/")
        if let problem = lengthProblem(normal) { return .failure(problem) }
        return .success(normal)
    }

    /// The last path segment of `url`, percent-decoded; nil when there is none.
    static func fileName(of url: String) -> String? {
        guard let schemeEnd = url.range(ofASCII: "://") else { return nil }
        var path = url[schemeEnd.upperBound...]
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard let slash = path.firstIndex(of: "/") else { return nil }
        path = path[slash...]
        guard let last = path.split(separator: "/").last else { return nil }
        let decoded = String(last).removingPercentEncoding ?? String(last)
        guard !decoded.isEmpty, decoded != ".", decoded != "..", !decoded.contains("/") else { return nil }
        return decoded
    }
}

extension Result where Failure == DestinationPath.Problem {
    /// Unwraps, turning a problem into a located manifest error.
    func get(file: String, at location: SourceLocation) throws(ManifestError) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let problem): throw ManifestError(file: file, location: location, message: problem.message)
        }
    }
}
