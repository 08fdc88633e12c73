import Foundation

extension Manifest {
    /// Fetches each `sets:` list once, checks its signature when the set names one,
    /// and appends the items it lists to `items` (SPEC §3); `sets` is empty after.
    /// Call it before `Plan(manifest:)`, so tags, shards and `plan` see the items.
    ///
    /// With a `cache` (the tree's `.jgmirror/lists/`), each list is asked for only if
    /// it changed since the cached copy, and a `304` uses that copy; the signature is
    /// still fetched and checked against the bytes used, every time.
    ///
    /// A list whose signature fails (bad, missing, unknown key) still names its
    /// items, but each fails with `signature` (exit 3) and nothing is fetched for it.
    /// A list that cannot be fetched or parsed, names no usable file, or a name that
    /// leaves the set's folder or is another's destination, fails its own set
    /// (`listFailures`, code `list`, exit 1; `host_down` or `rate_limited` when its host
    /// is down or asks to wait too long, SPEC §5a); the other sets go on (SPEC §10).
    /// The lists' hosts are judged by the run's host table: give `SyncSession` the same
    /// `options`, and its items go on from the hosts as the lists left them (a host
    /// found down is not asked again).
    /// Throws only what stops the run as a whole (this machine cannot hold a list).
    public mutating func expandSets(options: SyncOptions = SyncOptions(), headers: [HTTPHeader] = [], cache: ListCache? = nil)
        async throws(SyncError)
    {
        guard !sets.isEmpty else { return }
        var cache = cache
        cache?.durable = options.durable
        let (hosts, origins) = (self.hosts, originHosts)
        try await ListFetcher.withEngine(options: options, hosts: hosts, origins: origins, cache: cache) {
            fetcher throws(SyncError) in
            defer { listWarnings += fetcher.warnings.value }
            try await expandSets(with: fetcher, headers: headers)
        }
    }

    /// `expandSets` through `fetcher`.
    private mutating func expandSets(with fetcher: ListFetcher, headers: [HTTPHeader]) async throws(SyncError) {
        var expansion = SetExpansion(file: path, items: itemChunks, portableNames: portableNames)
        defer { warnings += expansion.warnings }
        for set in sets {
            setFolders.append(set.dest)
            let setHeaders = Plan.mergeHeaders(defaults.headers ?? [], set.settings.headers ?? [], headers)
            switch try await expand(set, with: fetcher, headers: setHeaders, into: &expansion) {
            case .items(let expanded, nil, let published):
                itemChunks.append(contentsOf: expanded)
                if let published { publishedLists.append(published) }
            case .items(let expanded, let failure?, _):
                // The list names its items, but they fail with the signature, and the
                // list decides nothing about what --delete removes under its folder.
                for item in expanded { failures[item.dest ?? ""] = failure }
                distrustedFolders.append(set.dest)
                itemChunks.append(contentsOf: expanded)
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
        case items([ManifestItem], signatureFailure: ItemError?, published: PublishedList? = nil)
        case failed(ItemError)
    }

    /// Fetches, checks and reads `set`'s list. Throws only what stops the whole run (this
    /// machine cannot hold the list); a list's own faults fail its set alone.
    private func expand(
        _ set: ManifestSet, with fetcher: ListFetcher, headers: [HTTPHeader], into expansion: inout SetExpansion
    ) async throws(SyncError) -> SetOutcome {
        let source = Redactor.redactURLAndQuery(set.sums)
        let fetched: ListFetcher.FetchedList
        do { fetched = try await fetcher.verifiedText(set.sums, headers: headers, signature: set.signature) } catch {
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
        let published: PublishedList
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
    ) throws(ManifestError) -> PublishedList {
        // The parser has checked that both URLs end in distinct file names.
        let name = PublishedList.fileName(of: set.sums) ?? "SUMS"
        try expansion.claimPublished(name, source: set.sums, of: set)
        var signatureName: String?
        if let signature = set.signature {
            signatureName = PublishedList.fileName(of: signature.url) ?? name + ".sig"
            try expansion.claimPublished(signatureName ?? "", source: signature.url, of: set)
        }
        guard let bytes = FileManager.default.contents(atPath: fetched.path) else {
            throw ManifestError(
                file: path, location: set.location,
                message: "cannot read the fetched list \(Redactor.redactURLAndQuery(set.sums)) again to publish it")
        }
        return PublishedList(
            folder: set.dest, url: set.sums, name: name, bytes: bytes, signatureName: signatureName,
            signatureBytes: set.signature == nil ? nil : fetched.signature, members: Set(items.compactMap(\.dest)))
    }
}
