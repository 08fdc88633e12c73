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

    /// The items `list` gives `set`, after `include`/`exclude`. An untrusted list (its
    /// signature failed) only names the items that fail: entries that would be
    /// errors are left out instead.
    mutating func items(of set: ManifestSet, list: SumsList, trusted: Bool = true) throws(ManifestError) -> [ManifestItem] {
        let source = Redactor.redactURLAndQuery(set.sums)
        var items: [ManifestItem] = []
        // Arenas of this set's items only: nothing appends to them once they are returned.
        var texts = TextArena.Builder()
        for entry in list.entries {
            if !set.include.isEmpty, !set.include.contains(where: { SetExpansion.matches($0, entry.name) }) { continue }
            if set.exclude.contains(where: { SetExpansion.matches($0, entry.name) }) { continue }
            guard let dest = try destination(of: entry, in: set, trusted: trusted) else { continue }
            taken[dest] = .listed(source: source, line: entry.line)
            addFolders(of: dest)
            let url = SetExpansion.resolve(name: entry.name, against: set.sums)
            var item = ManifestItem(texts: texts.texts(url: url, dest: dest), hasDest: true, location: set.location)
            item.urlLocation = set.sumsLocation
            item.destLocation = set.sumsLocation
            let mirrors = set.mirrorsBase.map { SetExpansion.resolve(name: entry.name, against: $0, isFolder: true) }
            item.extras = ItemExtras(mirrors: mirrors, sha512: entry.isSHA512 ? entry.hash : nil, tag: set.tag)
            if !entry.isSHA512 { item.sha256 = entry.hash }
            item.settings = set.settings
            items.append(item)
        }
        // An empty or cut answer, or filters that match nothing, must not pass as a set
        // with no files: under `--delete` that would empty the set's folder.
        if items.isEmpty, trusted {
            let count = list.entries.count
            let why =
                count == 0
                ? "lists no file" : "lists \(count) file\(count == 1 ? "" : "s"), and include/exclude leave none of them"
            throw ManifestError(file: file, location: set.sumsLocation, message: "\(source) \(why)")
        }
        return items
    }

    /// Where `entry` of `set`'s list goes: a file inside the set's folder that no item,
    /// other listed file or other set's snapshots claim, and that no name clashes with
    /// on a case-insensitive file system. A name that breaks a rule fails the list; nil
    /// (the entry left out) when the list is not `trusted`.
    private mutating func destination(of entry: SumsList.Entry, in set: ManifestSet, trusted: Bool) throws(ManifestError)
        -> String?
    {
        func failure(_ message: String) -> ManifestError {
            let source = Redactor.redactURLAndQuery(set.sums)
            return ManifestError(file: file, location: set.sumsLocation, message: "\(source) line \(entry.line): \(message)")
        }
        // A name whose last segment is empty, `.` or `..` names a folder: no file to
        // fetch (a destination ending in `/` would take its name from the list's URL).
        let last = entry.name.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        if last.isEmpty || last == "." || last == ".." {
            if !trusted { return nil }
            throw failure("'\(entry.name)' names a folder; a listed name must be a file")
        }
        let name: String
        switch DestinationPath.normalize(entry.name, url: set.sums) {
        case .success(let normal): name = normal
        case .failure where !trusted: return nil
        case .failure(.absolute), .failure(.escapes):
            throw failure("'\(entry.name)' leaves the set's folder; a listed name must stay inside it")
        case .failure(let problem): throw failure(problem.message)
        }
        let dest = set.dest + name
        if let folder = snapshotFolders.first(where: { $0 != set.dest && dest.hasPrefix($0) }) {
            if !trusted { return nil }
            throw failure("'\(entry.name)' would lie in '\(folder)', which another set publishes as snapshots of its own")
        }
        if let conflict = conflict(dest) {
            if !trusted { return nil }
            throw failure(conflict)
        }
        // Two names one file on macOS and Windows, as for the manifest's own items.
        if let clash = caseClash(dest, line: entry.line) {
            if portableNames, !trusted { return nil }
            let problem = failure(clash + " on a case-insensitive file system (macOS, Windows)")
            if portableNames { throw problem }
            warnings.append(problem.allowedUnless("--portable-names"))
        }
        return dest
    }

    /// Takes `set.dest` + `name` for the list or signature `source` that `set` publishes;
    /// throws when an item or a listed file has that destination already.
    mutating func claimPublished(_ name: String, source: String, of set: ManifestSet) throws(ManifestError) {
        let dest = set.dest + name
        let shown = Redactor.redactURLAndQuery(source)
        if let conflict = conflict(dest) {
            throw ManifestError(file: file, location: set.location, message: "cannot publish \(shown): \(conflict)")
        }
        taken[dest] = .published(source: shown)
        addFolders(of: dest)
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
