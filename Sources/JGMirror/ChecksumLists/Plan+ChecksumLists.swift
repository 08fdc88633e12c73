import Foundation

extension Plan {
    /// Reads the lists of the manifest's `sets:` through `fetcher` (the run's engine and
    /// list cache) and plans every item, the sets' after the manifest's own
    /// (docs/manifest.md#sets). `served` and `now` as `Manifest.expandSets(with:)` takes them.
    mutating func expandSets(with fetcher: ListFetcher, served: String?, now: Int64) async throws(SyncError) {
        guard awaitsSets else { return }
        try await manifest.expandSets(with: fetcher, headers: options.headers, served: served, now: now)
        planManifestItems()
    }

    /// Fetches each `checksums:` list on an engine of `configuration` (the public entry
    /// is `applyChecksumLists(options:)`).
    mutating func applyChecksumLists(configuration: TransferEngine.Configuration) async throws(SyncError) {
        guard !manifest.checksums.isEmpty else { return }
        var cache = ListCache(root: root, readOnly: true)
        cache.redact = manifest.defaults.redact ?? []
        let (hosts, origins) = (manifest.hosts, manifest.originHosts)
        try await ListFetcher.withEngine(configuration: configuration, hosts: hosts, origins: origins, cache: cache) {
            fetcher throws(SyncError) in
            try await applyChecksumLists(with: fetcher)
        }
    }

    /// `--require-checksums`, once the lists have given their hashes: the first item
    /// still without one is a manifest error.
    public func requireChecksums() throws(SyncError) {
        guard let item = items.first(where: { !$0.hasChecksum && !$0.isLink }) else { return }
        throw .manifest(
            ManifestError(
                file: manifest.path, location: item.location,
                message: "item '\(item.dest)' has no checksum (inline or from a checksums file) and --require-checksums is set"))
    }

    /// The same through `fetcher` (and its engine and cache). A list that cannot be
    /// fetched or read fails alone (`manifest.listFailures`, code `list`, or its host's
    /// `host_down` or `rate_limited`), and so do the items left without a checksum,
    /// which it may have listed, with its code (docs/sync.md#failed-lists).
    mutating func applyChecksumLists(with fetcher: ListFetcher) async throws(SyncError) {
        var sums: [(source: ChecksumSource, hashes: [String: String])] = []
        var failed: [ListFailure] = []
        for source in manifest.checksums {
            let headers = listHeaders[source.url] ?? []
            let name = Redactor.redactURLAndQuery(source.url)
            func fail(_ message: String) {
                failed.append(ListFailure(folder: nil, url: source.url, error: ItemError(code: .list, message: message)))
            }
            let list: ListFetcher.FetchedList
            do {
                list = try await fetcher.verifiedText(
                    source.url, headers: headers, settings: ListFetcher.Settings(defaults: manifest.defaults),
                    signature: source.signature)
            } catch {
                guard case .checksums = error else { throw error }
                failed.append(ListFailure(folder: nil, url: source.url, error: error.listError))
                continue
            }
            let hashes: [String: String]
            do { hashes = try ChecksumFiles.parse(list.text, baseURL: source.url) } catch {
                fail("\(name) \(error.message)")
                continue
            }
            // An empty answer, or one in another encoding, must not leave every item
            // silently unverified.
            guard !hashes.isEmpty else {
                fail("\(name) lists no file ('HASH  NAME' lines)")
                continue
            }
            if let failure = list.signatureFailure {
                for index in items.indices
                where ([items[index].url] + items[index].mirrors).contains(where: { hashes[$0] != nil }) {
                    items[index].failure = failure
                }
                continue
            }
            sums.append((source, hashes))
        }
        do { try ChecksumFiles.apply(sums, to: &self) } catch { throw .manifest(error) }
        guard let first = failed.first else { return }
        manifest.listFailures += failed
        let reason = "no checksum, and the checksums list that may give it failed: \(first.error.message)"
        for index in items.indices where !items[index].hasChecksum && items[index].failure == nil {
            items[index].failure = ItemError(code: first.error.code, message: reason)
        }
    }
}
