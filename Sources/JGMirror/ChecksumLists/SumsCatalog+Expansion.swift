import Foundation

/// A `sums:` set in a run (docs/manifest.md#sets): its list fetched and checked, each
/// line an item, and with `publish: true` the verified list and signature placed after
/// them (docs/publishing.md#published-lists).
extension SumsCatalog: ExpandingCatalog {
    func expand(_ set: ManifestSet, in context: CatalogContext, claims: inout SetExpansion) async throws(SyncError)
        -> CatalogExpansion
    {
        let source = Redactor.redactURLAndQuery(sums)
        let fetched: ListFetcher.FetchedList
        do {
            fetched = try await context.fetcher.verifiedText(
                sums, headers: context.headers, settings: context.settings(of: set), signature: signature)
        } catch {
            guard case .checksums = error else { throw error }
            return .failed(set, source: sums, error.listError)
        }
        let failure = fetched.signatureFailure
        let list: SumsList
        do { list = try SumsList(parsing: fetched.text, lenient: failure != nil) } catch {
            switch error {
            case .malformed(let line, let message):
                return .failed(set, source: sums, ItemError(code: .list, message: "\(source) line \(line): \(message)"))
            }
        }
        // A list refused half-way must not keep the destinations it took.
        var trial = claims
        let expanded: [ManifestItem]
        do { expanded = try items(of: set, list: list, trusted: failure == nil, claims: &trial) } catch {
            return .failed(set, source: sums, ItemError(code: .list, message: error.message))
        }
        if let failure {
            // The list names its items, but they fail with the signature, and the list
            // decides nothing about what --delete removes under its folder.
            guard !expanded.isEmpty else {
                // An empty or cut list whose signature failed must not pass for a set with no files.
                return .failed(
                    set, source: sums, ItemError(code: .signature, message: "\(source) names no file, and \(failure.message)"))
            }
            claims = trial
            var failedItems: [String: ItemError] = [:]
            for item in expanded { failedItems[item.dest ?? ""] = failure }
            return CatalogExpansion(items: expanded, failedItems: failedItems, distrusted: true)
        }
        guard set.publish else {
            claims = trial
            return CatalogExpansion(items: expanded)
        }
        let published: PublishGroup
        do { published = try publishing(set, fetched: fetched, items: expanded, file: context.file, into: &trial) } catch {
            return .failed(set, source: sums, ItemError(code: .list, message: error.message))
        }
        claims = trial
        return CatalogExpansion(items: expanded, groups: [published])
    }

    /// The items `list` gives `set`, after `include`/`exclude`. An untrusted list (its
    /// signature failed) only names the items that fail: entries that would be
    /// errors are left out instead.
    func items(of set: ManifestSet, list: SumsList, trusted: Bool = true, claims: inout SetExpansion) throws(ManifestError)
        -> [ManifestItem]
    {
        let (source, file) = (Redactor.redactURLAndQuery(sums), claims.file)
        func failure(_ line: Int, _ message: String) -> ManifestError {
            ManifestError(file: file, location: sumsLocation, message: "\(source) line \(line): \(message)")
        }
        var items: [ManifestItem] = []
        // Arenas of this set's items only: nothing appends to them once they are returned.
        var texts = TextArena.Builder()
        for entry in list.entries {
            if !include.isEmpty, !include.contains(where: { SetExpansion.matches($0, entry.name) }) { continue }
            if exclude.contains(where: { SetExpansion.matches($0, entry.name) }) { continue }
            // A name whose last segment is empty, `.` or `..` names a folder: no file to
            // fetch (a destination ending in `/` would take its name from the list's URL).
            let last = entry.name.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
            if last.isEmpty || last == "." || last == ".." {
                if !trusted { continue }
                throw failure(entry.line, "'\(entry.name)' names a folder; a listed name must be a file")
            }
            let name: String
            switch DestinationPath.normalize(entry.name, url: sums) {
            case .success(let normal): name = normal
            case .failure where !trusted: continue
            case .failure(.absolute), .failure(.escapes):
                throw failure(entry.line, "'\(entry.name)' leaves the set's folder; a listed name must stay inside it")
            case .failure(let problem): throw failure(entry.line, problem.message)
            }
            let dest = set.dest + name
            let owner = SetExpansion.Owner.listed(source: source, line: entry.line)
            if let refusal = claims.claim(dest, in: set.dest, by: owner, warning: { failure(entry.line, $0) }) {
                if !trusted { continue }
                throw failure(entry.line, refusal)
            }
            let url = SetExpansion.resolve(name: entry.name, against: sums)
            var item = ManifestItem(texts: texts.texts(url: url, dest: dest), hasDest: true, location: set.location)
            item.urlLocation = sumsLocation
            item.destLocation = sumsLocation
            let mirrors = mirrorsBase.map { SetExpansion.resolve(name: entry.name, against: $0, isFolder: true) }
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
            throw ManifestError(file: file, location: sumsLocation, message: "\(source) \(why)")
        }
        return items
    }

    /// What `set` (`publish: true`) places once its `items` are in place: the bytes of
    /// `fetched` exactly as verified, and its signature's; both destinations taken.
    private func publishing(
        _ set: ManifestSet, fetched: ListFetcher.FetchedList, items: [ManifestItem], file: String,
        into claims: inout SetExpansion
    ) throws(ManifestError) -> PublishGroup {
        // The parser has checked that both URLs end in distinct file names.
        let name = PublishGroup.fileName(of: sums) ?? "SUMS"
        try claim(name, source: sums, of: set, in: &claims)
        var signatureName: String?
        if let signature {
            signatureName = PublishGroup.fileName(of: signature.url) ?? name + ".sig"
            try claim(signatureName ?? "", source: signature.url, of: set, in: &claims)
        }
        guard let bytes = FileManager.default.contents(atPath: fetched.path) else {
            throw ManifestError(
                file: file, location: set.location,
                message: "cannot read the fetched list \(Redactor.redactURLAndQuery(sums)) again to publish it")
        }
        var published = [PublishedFile(dest: set.dest + name, source: .bytes(bytes), url: sums)]
        if let signatureName, let signature, let signed = fetched.signature {
            published.append(PublishedFile(dest: set.dest + signatureName, source: .bytes(signed), url: signature.url))
        }
        let files = items.compactMap(\.dest).map { PublishedFile(dest: $0, source: .item, url: "") }
        return PublishGroup(folder: set.dest, name: sums, phases: [files, published])
    }

    /// Takes `set.dest` + `name` for the list or signature `source` that `set` publishes;
    /// throws when an item or a listed file has that destination already.
    private func claim(_ name: String, source: String, of set: ManifestSet, in claims: inout SetExpansion)
        throws(ManifestError)
    {
        let (shown, file) = (Redactor.redactURLAndQuery(source), claims.file)
        let warning = { (message: String) in ManifestError(file: file, location: set.location, message: message) }
        if let refusal = claims.claim(set.dest + name, in: set.dest, by: .published(source: shown), warning: warning) {
            throw ManifestError(file: file, location: set.location, message: "cannot publish \(shown): \(refusal)")
        }
    }
}
