import Foundation

/// A kind of set as a run expands it (docs/manifest.md#sets): its catalog fetched
/// through the run's `ListFetcher` (conditional, cached, on the run's engine and host
/// table), checked, and turned into items, the destinations claimed in the run's
/// `SetExpansion`, and what is placed after the items as `PublishGroup`s. The run does
/// the rest as for any item: tags, shards, the state database, placement, reports.
protocol ExpandingCatalog: SetCatalog {
    /// The items and groups of `set`, whose catalog this is. Throws only what stops the
    /// whole run (this machine cannot hold a list); a catalog's own faults fail its set,
    /// or a part of it, in the expansion's `failures`.
    func expand(_ set: ManifestSet, in context: CatalogContext, claims: inout SetExpansion) async throws(SyncError)
        -> CatalogExpansion
}

/// What a catalog is expanded with.
struct CatalogContext {
    /// The run's list fetcher (its engine, host table and list cache).
    let fetcher: ListFetcher
    /// The set's request headers: the manifest's, the set's, the command line's.
    let headers: [HTTPHeader]
    /// The manifest's `defaults:`, under the set's own options.
    let defaults: ItemSettings
    /// The manifest's path, for errors.
    let file: String
    /// The folder the tree's readers are served (its root, or the snapshot `current`
    /// names), where what the mirror publishes now is read (an apt suite's Release, for
    /// the replay rule); nil without a tree.
    let served: String?
    /// Now, in seconds since the epoch, from the run's clock.
    let now: Int64

    /// How the set's list requests go: its options over `defaults:`.
    func settings(of set: ManifestSet) -> ListFetcher.Settings { ListFetcher.Settings(set.settings, defaults: defaults) }
}

/// What a set's catalog gives the run.
struct CatalogExpansion {
    /// Every item of the set, whether it is fetched or fails at once.
    var items: [ManifestItem] = []
    /// Items that fail without being fetched, by destination, with why (a list whose
    /// signature failed names its items, each failing with `signature`).
    var failedItems: [String: ItemError] = [:]
    /// What is placed in order once the items are in place.
    var groups: [PublishGroup] = []
    /// Lists that failed as a whole (a set's list, an apt suite's Release or index):
    /// each is a report row, and the run deletes nothing.
    var failures: [ListFailure] = []
    /// The set's folder decides nothing for `--delete`: a list of it was not trusted.
    var distrusted = false

    /// A set that failed as a whole, with one row for `source`.
    static func failed(_ set: ManifestSet, source: String, _ error: ItemError) -> CatalogExpansion {
        CatalogExpansion(failures: [ListFailure(folder: set.dest, url: source, error: error)], distrusted: true)
    }
}
