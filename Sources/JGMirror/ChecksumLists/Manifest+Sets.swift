import Foundation

extension Manifest {
    /// Fetches each `sets:` list on an engine of `configuration` (the public entry is
    /// `expandSets(options:headers:cache:)`).
    mutating func expandSets(configuration: TransferEngine.Configuration, headers: [HTTPHeader], cache: ListCache?)
        async throws(SyncError)
    {
        guard !sets.isEmpty else { return }
        var cache = cache
        cache?.durable = configuration.durable
        let (hosts, origins) = (self.hosts, originHosts)
        try await ListFetcher.withEngine(configuration: configuration, hosts: hosts, origins: origins, cache: cache) {
            fetcher throws(SyncError) in
            defer { listWarnings += fetcher.warnings.value }
            try await expandSets(with: fetcher, headers: headers)
        }
    }

    /// `expandSets` through `fetcher`; `headers` are the command line's, after the
    /// manifest's and the set's.
    mutating func expandSets(with fetcher: ListFetcher, headers: [HTTPHeader]) async throws(SyncError) {
        var expansion = SetExpansion(file: path, items: itemChunks, portableNames: portableNames)
        expansion.snapshotFolders = snapshotSets.map(\.folder)
        defer { warnings += expansion.warnings }
        for set in sets {
            setFolders.append(set.dest)
            if setLists[set.dest] == nil { setLists[set.dest] = set.sums }
            let setHeaders = Plan.mergeHeaders(defaults.headers ?? [], set.settings.headers ?? [], headers)
            let own = snapshotSets.firstIndex { $0.location == set.location }
            switch try await expand(set, with: fetcher, headers: setHeaders, into: &expansion) {
            case .items(let expanded, nil, let published):
                itemChunks.append(contentsOf: expanded)
                if let published { publishGroups.append(published) }
                if let own { snapshotSets[own].files = expanded.count }
            case .items(let expanded, let failure?, _):
                // The list names its items, but they fail with the signature, and the
                // list decides nothing about what --delete removes under its folder.
                for item in expanded { failures[item.dest ?? ""] = failure }
                distrustedFolders.append(set.dest)
                itemChunks.append(contentsOf: expanded)
                if let own { snapshotSets[own].files = expanded.count }
            case .failed(let error):
                listFailures.append(ListFailure(folder: set.dest, url: set.sums, error: error))
                distrustedFolders.append(set.dest)
            }
        }
        sets = []
    }

    /// What one set's list gives: its items (failing with `signature` when the list is
    /// not signed as it must be), or why the set fails as a whole (`list`, or
    /// `signature` for a list that fails its signature and names nothing).
    private enum SetOutcome {
        /// With `published`, the list to place after the items (`publish: true` and a
        /// list that verified).
        case items([ManifestItem], signatureFailure: ItemError?, published: PublishGroup? = nil)
        case failed(ItemError)
    }

    /// Fetches, checks and reads `set`'s list. Throws only what stops the whole run (this
    /// machine cannot hold the list); a list's own faults fail its set alone.
    private func expand(
        _ set: ManifestSet, with fetcher: ListFetcher, headers: [HTTPHeader], into expansion: inout SetExpansion
    ) async throws(SyncError) -> SetOutcome {
        let source = Redactor.redactURLAndQuery(set.sums)
        let fetched: ListFetcher.FetchedList
        do {
            fetched = try await fetcher.verifiedText(
                set.sums, headers: headers, settings: ListFetcher.Settings(set.settings, defaults: defaults),
                signature: set.signature)
        } catch {
            guard case .checksums = error else { throw error }
            return .failed(error.listError)
        }
        let failure = fetched.signatureFailure
        let list: SumsList
        do { list = try SumsList(parsing: fetched.text, lenient: failure != nil) } catch {
            switch error {
            case .malformed(let line, let message):
                return .failed(ItemError(code: .list, message: "\(source) line \(line): \(message)"))
            }
        }
        // A list refused half-way must not keep the destinations it took.
        var trial = expansion
        let expanded: [ManifestItem]
        do { expanded = try trial.items(of: set, list: list, trusted: failure == nil) } catch {
            return .failed(ItemError(code: .list, message: error.message))
        }
        if let failure, expanded.isEmpty {
            // An empty or cut list whose signature failed must not pass for a set with no files.
            return .failed(ItemError(code: .signature, message: "\(source) names no file, and \(failure.message)"))
        }
        // A list whose signature failed is never published: the previous one stays.
        guard set.publish, failure == nil else {
            expansion = trial
            return .items(expanded, signatureFailure: failure)
        }
        let published: PublishGroup
        do { published = try publishing(set, fetched: fetched, items: expanded, into: &trial) } catch {
            return .failed(ItemError(code: .list, message: error.message))
        }
        expansion = trial
        return .items(expanded, signatureFailure: nil, published: published)
    }

    /// What `set` (`publish: true`) places once its `items` are in place: the bytes of
    /// `fetched` exactly as verified, and its signature's; both destinations taken.
    private func publishing(
        _ set: ManifestSet, fetched: ListFetcher.FetchedList, items: [ManifestItem], into expansion: inout SetExpansion
    ) throws(ManifestError) -> PublishGroup {
        // The parser has checked that both URLs end in distinct file names.
        let name = PublishGroup.fileName(of: set.sums) ?? "SUMS"
        try expansion.claimPublished(name, source: set.sums, of: set)
        var signatureName: String?
        if let signature = set.signature {
            signatureName = PublishGroup.fileName(of: signature.url) ?? name + ".sig"
            try expansion.claimPublished(signatureName ?? "", source: signature.url, of: set)
        }
        guard let bytes = FileManager.default.contents(atPath: fetched.path) else {
            throw ManifestError(
                file: path, location: set.location,
                message: "cannot read the fetched list \(Redactor.redactURLAndQuery(set.sums)) again to publish it")
        }
        var published = [PublishedFile(dest: set.dest + name, source: .bytes(bytes), url: set.sums)]
        if let signatureName, let signature = set.signature, let signed = fetched.signature {
            published.append(PublishedFile(dest: set.dest + signatureName, source: .bytes(signed), url: signature.url))
        }
        let files = items.compactMap(\.dest).map { PublishedFile(dest: $0, source: .item, url: "") }
        return PublishGroup(folder: set.dest, name: set.sums, phases: [files, published])
    }
}
