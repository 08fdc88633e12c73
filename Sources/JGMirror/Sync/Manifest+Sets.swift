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
    /// Throws `.checksums` when a list cannot be fetched (exit 1) and `.manifest`
    /// for a malformed list, a name that leaves the set's folder or a destination
    /// another item or set already has (exit 2).
    public mutating func expandSets(options: SyncOptions = SyncOptions(), headers: [HTTPHeader] = [], cache: ListCache? = nil) async throws(SyncError) {
        guard !sets.isEmpty else { return }
        var cache = cache
        cache?.durable = options.durable
        try await ListFetcher.withEngine(options: options, cache: cache) { fetcher throws(SyncError) in
            defer { listWarnings += fetcher.warnings.value }
            try await expandSets(with: fetcher, headers: headers)
        }
    }

    /// `expandSets` through `fetcher`.
    private mutating func expandSets(with fetcher: ListFetcher, headers: [HTTPHeader]) async throws(SyncError) {
        var expansion = SetExpansion(file: path, items: itemChunks, portableNames: portableNames)
        defer { warnings += expansion.warnings }
        for set in sets {
            let setHeaders = Plan.mergeHeaders(defaults.headers ?? [], set.settings.headers ?? [], headers)
            let (listPath, text) = try await fetcher.text(set.sums, headers: setHeaders)
            var failure: ItemError?
            if let signature = set.signature {
                failure = await fetcher.check(list: listPath, listURL: set.sums, signature: signature, headers: setHeaders)
            }
            let list: SumsList
            do { list = try SumsList(parsing: text, lenient: failure != nil) } catch {
                switch error {
                case .malformed(let line, let message):
                    throw .manifest(
                        ManifestError(
                            file: path, location: set.sumsLocation, message: "\(Redactor.redactURLAndQuery(set.sums)) line \(line): \(message)"))
                }
            }
            let expanded: [ManifestItem]
            do { expanded = try expansion.items(of: set, list: list, trusted: failure == nil) } catch { throw .manifest(error) }
            if let failure {
                // An empty or cut list whose signature failed must not pass for a set
                // with no files, nor decide what --delete removes under its folder.
                guard !expanded.isEmpty else {
                    throw .manifest(
                        ManifestError(
                            file: path, location: set.sumsLocation,
                            message: "\(Redactor.redactURLAndQuery(set.sums)) names no file, and \(failure.message)"))
                }
                for item in expanded { failures[item.dest ?? ""] = failure }
                distrustedFolders.append(set.dest)
            }
            itemChunks.append(contentsOf: expanded)
        }
        sets = []
    }
}
