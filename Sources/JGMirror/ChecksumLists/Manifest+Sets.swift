import Foundation

extension Manifest {
    /// Fetches each `sets:` list on an engine of `configuration` (the public entry is
    /// `expandSets(options:headers:cache:)`); `served` and `now` as `expandSets(with:)`
    /// takes them.
    mutating func expandSets(
        configuration: TransferEngine.Configuration, headers: [HTTPHeader], cache: ListCache?, served: String?, now: Int64
    ) async throws(SyncError) {
        guard !sets.isEmpty else { return }
        var cache = cache
        cache?.durable = configuration.durable
        let (hosts, origins) = (self.hosts, originHosts)
        try await ListFetcher.withEngine(configuration: configuration, hosts: hosts, origins: origins, cache: cache) {
            fetcher throws(SyncError) in
            defer { listWarnings += fetcher.warnings.value }
            try await expandSets(with: fetcher, headers: headers, served: served, now: now)
        }
    }

    /// `expandSets` through `fetcher`; `headers` are the command line's, after the
    /// manifest's and the set's. `served` is the folder readers of the tree are served
    /// (its root, or its published snapshot), where what the mirror publishes now is
    /// read; `now` is the run's clock, in seconds since the epoch.
    mutating func expandSets(with fetcher: ListFetcher, headers: [HTTPHeader], served: String?, now: Int64)
        async throws(SyncError)
    {
        var claims = SetExpansion(file: path, items: itemChunks, portableNames: portableNames)
        claims.snapshotFolders = snapshotSets.map(\.folder)
        defer { warnings += claims.warnings }
        for set in sets {
            setFolders.append(set.dest)
            if setLists[set.dest] == nil { setLists[set.dest] = set.source }
            let grace = set.keepRemoved ?? keepRemoved ?? type(of: set.catalog).defaultKeepRemoved
            setKeepRemoved[set.dest] = max(grace, setKeepRemoved[set.dest] ?? 0)
            let context = CatalogContext(
                fetcher: fetcher, headers: ItemOptions.mergeHeaders(defaults.headers ?? [], set.settings.headers ?? [], headers),
                defaults: defaults, file: path, served: served, now: now)
            let expansion: CatalogExpansion
            if let catalog = set.catalog as? any ExpandingCatalog {
                expansion = try await catalog.expand(set, in: context, claims: &claims)
            } else {
                let error = ItemError(code: .list, message: "this jgmirror cannot expand '\(set.kind)' sets")
                expansion = .failed(set, source: set.source, error)
            }
            adopt(expansion, of: set)
        }
        sets = []
    }

    /// Takes what a set's catalog gave into the manifest: its items (some failing at
    /// once), its groups, its failed lists, and whether its folder is trusted.
    private mutating func adopt(_ expansion: CatalogExpansion, of set: ManifestSet) {
        itemChunks.append(contentsOf: expansion.items)
        for (dest, failure) in expansion.failedItems { failures[dest] = failure }
        publishGroups += expansion.groups
        listFailures += expansion.failures
        if expansion.distrusted { distrustedFolders.append(set.dest) }
        // A set's own snapshot is built only when its catalog gave it files to hold.
        if let own = snapshotSets.firstIndex(where: { $0.location == set.location }),
            !expansion.items.isEmpty || expansion.failures.isEmpty
        {
            snapshotSets[own].files = expansion.items.count
        }
    }
}
