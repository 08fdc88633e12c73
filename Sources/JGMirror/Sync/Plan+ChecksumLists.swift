import Foundation

extension Plan {
    /// Fetches each `checksums:` list once (conditionally, against the copy cached under
    /// `ROOT/.jgmirror/lists/`, which is only read), checks its signature when it has
    /// one, and gives the items the hashes it lists (SPEC §3): what `plan` and `verify`
    /// weigh the files on disk against, as `sync` does. Items a list with a failed
    /// signature names fail with `signature`.
    public mutating func applyChecksumLists(options: SyncOptions = SyncOptions()) async throws(SyncError) {
        guard !manifest.checksums.isEmpty else { return }
        try await ListFetcher.withEngine(options: options, cache: ListCache(root: root, readOnly: true)) { fetcher throws(SyncError) in
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

    /// The same through `fetcher` (and its engine and cache).
    mutating func applyChecksumLists(with fetcher: ListFetcher) async throws(SyncError) {
        var sums: [(source: ChecksumSource, hashes: [String: String])] = []
        for source in manifest.checksums {
            let headers = listHeaders[source.url] ?? []
            let (path, text) = try await fetcher.text(source.url, headers: headers)
            let hashes = ChecksumFiles.parse(text, baseURL: source.url)
            // An empty answer, or one in another encoding, must not leave every item
            // silently unverified: as a set's list would, it stops the run.
            guard !hashes.isEmpty else {
                throw .manifest(
                    ManifestError(
                        file: manifest.path, location: source.location,
                        message: "\(Redactor.redactURLAndQuery(source.url)) lists no file ('HASH  NAME' lines)"))
            }
            if let signature = source.signature,
                let failure = await fetcher.check(list: path, listURL: source.url, signature: signature, headers: headers)
            {
                for index in items.indices where ([items[index].url] + items[index].mirrors).contains(where: { hashes[$0] != nil }) {
                    items[index].failure = failure
                }
                continue
            }
            sums.append((source, hashes))
        }
        do { try ChecksumFiles.apply(sums, to: &self) } catch { throw .manifest(error) }
    }
}
