import Foundation

extension Manifest {
    /// Fetches each `sets:` list once, checks its signature when the set names one,
    /// and appends the items it lists to `items` (docs/manifest.md#sets); `sets` is empty after.
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
    /// is down or asks to wait too long, docs/hosts.md#host-states); the other sets go on
    /// (docs/sync.md#failed-lists). The lists' hosts are judged by the run's host table: give
    /// `SyncSession` the same `options`, and its items go on from the hosts as the lists left them
    /// (a host found down is not asked again).
    /// Throws only what stops the run as a whole (this machine cannot hold a list).
    public mutating func expandSets(options: SyncOptions = SyncOptions(), headers: [HTTPHeader] = [], cache: ListCache? = nil)
        async throws(SyncError)
    {
        // With no list, the run's deadline is not started here (`engineConfiguration` fixes it).
        guard !sets.isEmpty else { return }
        let served = cache.map { SnapshotTree.publishedTree(root: $0.root) ?? $0.root }
        try await expandSets(
            configuration: options.engineConfiguration, headers: headers, cache: cache, served: served,
            now: options.now)
    }
}

extension Plan {
    /// Fetches each `checksums:` list once (conditionally, against the copy cached under
    /// `ROOT/.jgmirror/lists/`, which is only read), checks its signature when it has
    /// one, and gives the items the hashes it lists (docs/manifest.md#checksums-lists): what `plan`
    /// and `verify` weigh the files on disk against, as `sync` does. Items a list with a failed
    /// signature names fail with `signature`.
    public mutating func applyChecksumLists(options: SyncOptions = SyncOptions()) async throws(SyncError) {
        guard !manifest.checksums.isEmpty else { return }
        try await applyChecksumLists(configuration: options.engineConfiguration)
    }
}
