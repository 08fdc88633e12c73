import Foundation

/// Lexical rules for destinations (SPEC §3, §10): relative, inside the root, and
/// never one of jgmirror's own working names.
enum DestinationPath {
    /// Why a destination is refused.
    enum Problem: Error {
        case absolute(String)
        case escapes(String)
        case empty
        case noFileName(String)
        case reserved(String)
        case invalid(String)

        var message: String {
            switch self {
            case .absolute(let dest): "destination '\(dest)' is absolute; it must be relative to the root"
            case .escapes(let dest): "destination '\(dest)' leaves the root"
            case .empty: "destination is empty"
            case .noFileName(let url): "cannot take a file name from URL '\(Redactor.redactURL(url))'; give 'dest' a file name"
            case .reserved(let dest): "destination '\(dest)' uses a name jgmirror reserves (.jgpart, .jgd, .jgbad, .jgmirror.lock)"
            case .invalid(let dest): "destination '\(dest)' contains a control character"
            }
        }
    }

    static let reservedSuffixes = [".jgpart", ".jgd", ".jgbad", ".jgd.tmp"]

    /// The normalised relative path for `dest` (nil or a trailing `/` takes the URL's file name).
    static func normalize(_ dest: String?, url: String) -> Result<String, Problem> {
        var raw = dest ?? ""
        if raw.isEmpty || raw.hasSuffix("/") {
            guard let name = fileName(of: url) else { return .failure(.noFileName(url)) }
            raw += name
        }
        if raw.hasPrefix("/") || raw.hasPrefix("~") { return .failure(.absolute(raw)) }
        if raw.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) { return .failure(.invalid(raw)) }
        // Already normal (no empty, '.' or '..' segment): most manifests, checked on bytes.
        if !raw.hasPrefix("."), !raw.contains(ascii: "//"), !raw.contains(ascii: "/."), !raw.hasSuffix("/") {
            let last = Paths.lastComponent(of: raw)
            if last == ".jgmirror.lock" || reservedSuffixes.contains(where: { last.hasSuffix($0) }) {
                return .failure(.reserved(raw))
            }
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
        guard let last = parts.last else { return .failure(.empty) }
        if last == ".jgmirror.lock" || reservedSuffixes.contains(where: { last.hasSuffix($0) }) {
            return .failure(.reserved(raw))
        }
        return .success(parts.joined(separator: "/"))
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
