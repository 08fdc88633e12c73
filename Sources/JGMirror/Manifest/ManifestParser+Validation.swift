import Foundation

/// Checks across items, once every item is read: destinations taken twice or
/// clashing by case, and every URL through libcurl's parser.
extension ManifestParser {
    func validateItems(_ manifest: inout Manifest) throws(ManifestError) {
        let items = manifest.itemChunks
        var destinations = DestinationIndex(capacity: items.count)
        var directories = Set<String>()
        // The same, case-folded: names that collide on a case-insensitive file system.
        var foldedDestinations: [String: (dest: String, line: Int)] = [:]
        var foldedDirectories: [String: String] = [:]
        for index in items.indices {
            if let failure = destinationFailures[index] { throw failure }
            let item = items[index]
            let dest = item.dest ?? ""  // normalised by `parseItem`
            if let first = destinations.location(of: dest, in: items) {
                throw error(item.destLocation, "destination '\(dest)' is already used by the item at line \(first.line)")
            }
            if directories.contains(dest) {
                throw error(item.destLocation, "destination '\(dest)' is a folder of another item's destination")
            }
            var parent = dest
            while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
                parent = String(parent[..<slash])
                if let clash = destinations.location(of: parent, in: items) {
                    throw error(
                        item.destLocation,
                        "destination '\(dest)' lies inside '\(parent)', the file of the item at line \(clash.line)")
                }
                if !directories.insert(parent).inserted { break }
            }
            destinations.insert(dest, at: index, of: items)
            if let clash = Self.caseClash(
                dest, line: item.destLocation.line, exact: { destinations.location(of: $0, in: items) },
                exactFolders: directories,
                &foldedDestinations, &foldedDirectories)
            {
                let problem = error(item.destLocation, clash + " on a case-insensitive file system (macOS, Windows)")
                if options.portableNames { throw problem }
                manifest.warnings.append(problem.allowedUnless("--portable-names"))
            }
            if options.requireChecksums, item.packedSHA256 == nil, item.sha512 == nil, item.link == nil,
                manifest.checksums.isEmpty
            {
                throw error(item.location, "item '\(dest)' has no 'sha256' and --require-checksums is set")
            }
            if let owner = manifest.snapshotSets.first(where: { $0.holds(dest) }) {
                throw error(
                    item.destLocation,
                    "destination '\(dest)' lies inside '\(owner.folder)', which the set at line \(owner.location.line) publishes as snapshots of its own; only that set's files go there"
                )
            }
        }
        try validateSnapshotSets(manifest)
        try validateLinks(manifest)
    }

    /// The manifest's links together: one may lead out of the root, or into the state
    /// folder, through another (`up -> ..` beside `esc -> up/..`), which neither shows
    /// alone (docs/safety.md#links). Links on disk are the run's to judge.
    private func validateLinks(_ manifest: Manifest) throws(ManifestError) {
        let items = manifest.itemChunks
        let links = items.indices.compactMap { items[$0].link == nil ? nil : items[$0] }
        guard !links.isEmpty else { return }
        var resolver = LinkResolver(planned: [:], folders: Set(manifest.snapshotSets.map(\.scope)))
        for item in links { resolver.planned[item.dest ?? ""] = item.link }
        for item in links {
            if let problem = resolver.problem(item.link ?? "", of: item.dest ?? "") { throw error(item.urlLocation, problem) }
        }
    }

    /// A set's own snapshots (`publish: snapshot` below the root) replace its folder by
    /// a link: no other set's folder may lie inside it, nor may it lie inside another
    /// such set's.
    private func validateSnapshotSets(_ manifest: Manifest) throws(ManifestError) {
        for owner in manifest.snapshotSets {
            for set in manifest.sets where set.location != owner.location && set.dest.hasPrefix(owner.folder) {
                throw error(
                    set.location,
                    "the set's folder '\(set.dest)' lies inside '\(owner.folder)', which the set at line \(owner.location.line) publishes as snapshots of its own; only that set's files go there"
                )
            }
        }
    }

    /// Says which other destination `dest` would collide with where case does not
    /// count (a file with a file, or a file with a folder), and records it. Only
    /// destinations with an upper-case or non-ASCII byte are kept case-folded in
    /// `files`/`folders`: an all-lower-case one is its own folded form and already in
    /// `exact`/`exactFolders`, so a typical manifest pays lookups and no copies.
    /// `SetExpansion` applies the same rule to the names a list adds.
    static func caseClash(
        _ dest: String, line: Int, exact: (String) -> SourceLocation?, exactFolders: Set<String>,
        _ files: inout [String: (dest: String, line: Int)], _ folders: inout [String: String]
    ) -> String? {
        let folds = dest.utf8.contains { ($0 >= 0x41 && $0 <= 0x5A) || $0 >= 0x80 }
        let folded = folds ? dest.lowercased() : dest
        if let other = files[folded] {
            return "destination '\(dest)' and '\(other.dest)' (line \(other.line)) are the same file"
        }
        // Folding may leave a name as it was (`café`): then the exact lookup would
        // find this destination itself.
        let changed = folds && folded != dest
        if changed, let other = exact(folded) {
            return "destination '\(dest)' and '\(folded)' (line \(other.line)) are the same file"
        }
        if let other = folders[folded] ?? (changed && exactFolders.contains(folded) ? folded : nil) {
            return "destination '\(dest)' is the same name as the folder '\(other)' of another item"
        }
        var parent = Substring(dest)
        var foldedParent = Substring(folded)
        while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")),
            let foldedSlash = foldedParent.utf8.lastIndex(of: UInt8(ascii: "/"))
        {
            parent = parent[..<slash]
            foldedParent = foldedParent[..<foldedSlash]
            let key = String(foldedParent)
            if let other = files[key] {
                return "the folder '\(parent)' of destination '\(dest)' is the same name as '\(other.dest)' (line \(other.line))"
            }
            if folds, key != parent, let other = exact(key) {
                return "the folder '\(parent)' of destination '\(dest)' is the same name as '\(key)' (line \(other.line))"
            }
            if folds { folders[key] = folders[key] ?? String(parent) }
        }
        if folds { files[folded] = (dest, line) }
        return nil
    }

    /// A wrong checksum as an error quotes it: shortened, with its length (once).
    static func quoted(_ text: String) -> String {
        text.count > 80 ? "'\(Rules.abbreviated(text))'" : "'\(text)' (\(text.count) characters)"
    }

    func checkURL(_ url: String, at location: SourceLocation) throws(ManifestError) {
        if let problem = Rules.urlProblem(url, allowFileURLs: options.allowFileURLs, curl: curlURL) {
            throw error(location, problem)
        }
    }
}
