import Foundation

/// A set's checksums list (and its signature) as verified, to place in the set's
/// folder under their own names once every file of the set is in place (`publish:
/// true`, docs/publishing.md#published-lists): a reader who follows the list never meets a name it
/// promises that is not there, nor a list whose files are not yet the listed ones.
public struct PublishedList: Sendable, Equatable {
    /// The set's folder (`""`: the root, else ending in `/`).
    public var folder: String
    /// The list's URL, as the manifest names it (for the report, redacted there).
    public var url: String
    /// The list's own file name (the last name of its URL's path).
    public var name: String
    /// The exact bytes that were verified and expanded.
    public var bytes: Data
    /// The signature's own file name and the bytes gpgv accepted, when the set has one.
    public var signatureName: String?
    public var signatureBytes: Data?
    /// The destinations of the set's files: each must be in place before the list is.
    public var members: Set<String>
    /// Where the list is placed instead of the tree's root, by the same destination: the
    /// snapshot a set published as snapshots of its own is building (`SnapshotTree`).
    public var placedUnder: String?

    /// Where the list goes, relative to the root.
    public var dest: String { folder + name }
    /// Where the signature goes, relative to the root.
    public var signatureDest: String? { signatureName.map { folder + $0 } }
    /// Both destinations.
    public var dests: [String] { [dest] + (signatureDest.map { [$0] } ?? []) }

    /// The file name a published list or signature takes from its URL: the last name of
    /// the URL's path, percent-decoded; nil when there is none or it could not be a
    /// file's name in a folder (`.`, `..`, a `/` or NUL in it).
    public static func fileName(of url: String) -> String? {
        guard let parsed = URLComponents(string: url) else { return nil }
        let path = parsed.percentEncodedPath
        guard let last = path.split(separator: "/", omittingEmptySubsequences: false).last,
            let name = String(last).removingPercentEncoding
        else { return nil }
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else { return nil }
        return name
    }
}
