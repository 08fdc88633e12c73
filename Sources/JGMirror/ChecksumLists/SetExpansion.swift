import Foundation

/// Turns one `sets:` entry and its fetched list into manifest items (docs/manifest.md#sets): the
/// URL resolved against the list's, the destination `dest` + name confined to the
/// set's folder, the hash from the list, the set's options on every item.
struct SetExpansion {
    /// The manifest's path, for errors.
    let file: String
    /// Destinations taken so far, each with who took it, for conflict errors.
    private(set) var taken: [String: Owner] = [:]
    /// The folders on the way to them: no file may be placed where one is.
    private var folders = Set<String>()
    /// Names that differ only in case are errors (`--portable-names`), else warnings.
    private let portableNames: Bool
    /// The case-folded destinations and folders `ManifestParser.caseClash` keeps.
    private var foldedFiles: [String: (dest: String, line: Int)] = [:]
    private var foldedFolders: [String: String] = [:]
    /// Listed names that differ only in case from another destination, without `--portable-names`.
    private(set) var warnings: [ManifestError] = []
    /// The folders of sets published as snapshots of their own: only the set's files go there.
    var snapshotFolders: [String] = []

    /// Starts from the manifest's own items, whose destinations are already normal
    /// (and whose case collisions the parser reported).
    init(file: String, items: ManifestItemChunks, portableNames: Bool = false) {
        self.file = file
        self.portableNames = portableNames
        taken.reserveCapacity(items.count)
        for item in items {
            let dest = item.dest ?? ""
            _ = caseClash(dest, line: item.location.line)
            taken[dest] = .item(line: item.location.line)
            addFolders(of: dest)
        }
    }

    /// The manifest's case rule (docs/manifest.md#destinations) for `dest`, against every
    /// destination taken so far; records it.
    private mutating func caseClash(_ dest: String, line: Int) -> String? {
        let taken = taken
        return ManifestParser.caseClash(
            dest, line: line, exact: { taken[$0].map { SourceLocation(line: $0.line, column: 1) } }, exactFolders: folders,
            &foldedFiles, &foldedFolders)
    }

    /// Who took a destination: an item of the manifest, or a line of a list.
    enum Owner: Equatable {
        case item(line: Int)
        case listed(source: String, line: Int)
        /// A list or signature a set publishes (`publish: true`), by its URL.
        case published(source: String)

        /// "the item at line 6", "listed by URL line 3", "where URL is published".
        var text: String {
            switch self {
            case .item(let line): "the item at line \(line)"
            case .listed(let source, let line): "listed by \(source) line \(line)"
            case .published(let source): "where \(source) is published"
            }
        }

        /// The line of the manifest or of the list (0 for a published list, which has none).
        var line: Int {
            switch self {
            case .item(let line), .listed(_, let line): line
            case .published: 0
            }
        }

        /// "the file of the item at line 6", "the file listed by URL line 3".
        var file: String {
            switch self {
            case .item: "the file of \(text)"
            case .listed: "the file \(text)"
            case .published(let source): "the published \(source)"
            }
        }
    }

    /// Why `dest` cannot be placed next to the destinations taken so far
    /// (docs/manifest.md#destinations, as the manifest's own items are checked): it is taken, it is
    /// the folder of another destination, or one of its folders is another item's file.
    private func conflict(_ dest: String) -> String? {
        if let owner = taken[dest] { return "destination '\(dest)' is also \(owner.text)" }
        if folders.contains(dest) { return "destination '\(dest)' is a folder of another item's destination" }
        var parent = Substring(dest)
        while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
            parent = parent[..<slash]
            if let owner = taken[String(parent)] { return "destination '\(dest)' lies inside '\(parent)', \(owner.file)" }
        }
        return nil
    }

    private mutating func addFolders(of dest: String) {
        var parent = Substring(dest)
        while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
            parent = parent[..<slash]
            if !folders.insert(String(parent)).inserted { break }
        }
    }

    /// Takes `dest`, a file of the set whose folder is `folder`, for `owner`; nil when
    /// it is taken, else why it cannot be: it would lie in another set's own snapshot
    /// folder, it is another's destination or one of its folders, or (under
    /// `--portable-names`) it differs only in case from one. Without `--portable-names`
    /// such a clash is a warning, made by `warning` from its message.
    mutating func claim(_ dest: String, in folder: String, by owner: Owner, warning: (String) -> ManifestError) -> String? {
        if let other = snapshotFolders.first(where: { $0 != folder && dest.hasPrefix($0) }) {
            return "'\(dest)' would lie in '\(other)', which another set publishes as snapshots of its own"
        }
        if let conflict = conflict(dest) { return conflict }
        // Two names one file on macOS and Windows, as for the manifest's own items.
        if let clash = caseClash(dest, line: owner.line) {
            let message = clash + " on a case-insensitive file system (macOS, Windows)"
            if portableNames { return message }
            warnings.append(warning(message).allowedUnless("--portable-names"))
        }
        taken[dest] = owner
        addFolders(of: dest)
        return nil
    }

    /// `name`, percent-encoded segment by segment, in the folder of `base` (a list's
    /// URL) or in `base` itself when it is a folder (a `mirrors_base` entry).
    static func resolve(name: String, against base: String, isFolder: Bool = false) -> String {
        var folder = String(base.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0])
        folder = String(folder.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
        if isFolder {
            if !folder.hasSuffix("/") { folder += "/" }
        } else if let slash = folder.lastIndex(of: "/") {
            folder = String(folder[...slash])
        }
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#")
        let encoded = name.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }.joined(separator: "/")
        return folder + encoded
    }

    /// fnmatch(3) without flags: `*`, `?` and `[…]`, where `*` also spans `/`.
    static func matches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }
}
