import Foundation

/// The expanded queue: every selected item with its options resolved, under one root.
public struct Plan: Sendable {
    /// The manifest the plan came from, without its item list: the items live on,
    /// resolved, in `items` (keeping both doubled the memory of a large plan).
    public var manifest: Manifest
    /// Absolute destination root.
    public var root: String
    /// Selected items, in manifest order.
    public var items: [PlannedItem]
    /// How many items the manifest has before filters.
    public var totalInManifest: Int
    /// The shard taken, when one was.
    public var shard: Shard?
    /// The `--tag` filters applied, which a report records with the shard.
    public var tags: [String]
    /// The `--skip-tag` filters applied.
    public var skipTags: [String]
    /// Whether a tag or shard filter left items out of view, so the plan cannot tell
    /// which files under the root no item produces (`--delete` is refused).
    public var isFiltered: Bool
    /// The headers each `checksums:` list is fetched with, by its URL: those of the
    /// manifest's first item served from the list's origin, selected by the filters or
    /// not, so that a shard or a tag sees the same list (docs/safety.md#redirects-and-headers:
    /// headers stay with the origins they were written for). A list no item shares an origin with
    /// gets none.
    public var listHeaders: [String: [HTTPHeader]] = [:]
    /// The choices the plan was made with: the items of the manifest's sets, once their
    /// lists are read, are planned with them too (`adding`).
    public let options: PlanOptions
    /// Items the tag filters kept, before the shard, and every tag seen.
    private var tagSelected = 0
    private var knownTags = Set<String>()

    /// Set when `--tag`/`--skip-tag` selected no item: a usage error naming the tags the
    /// manifest has (docs/commands.md#selecting-items), so a typo in a CI job does not
    /// pass with nothing done. A shard that happens to be empty is not one. A plan whose
    /// sets are not expanded yet may have its items still to come.
    public var emptySelection: UsageError? {
        guard !options.tags.isEmpty || !options.skipTags.isEmpty, tagSelected == 0 else { return nil }
        return Plan.emptySelectionError(options: options, knownTags: knownTags)
    }

    /// Applies defaults, overrides, tag filters and the shard to `manifest`. A manifest
    /// whose `sets:` are not expanded yet is planned once a sync has read their lists
    /// (`expandSets(with:)`, which `SyncSession.run` calls): until then `items` is
    /// empty, and the manifest keeps its own items to tell a listed name that clashes
    /// with one of them.
    public init(manifest: consuming Manifest, options: PlanOptions = PlanOptions()) {
        self.manifest = manifest
        self.options = options
        totalInManifest = 0
        items = []
        root = Plan.resolveRoot(manifest: self.manifest, override: options.root)
        shard = options.shard
        tags = options.tags
        skipTags = options.skipTags
        isFiltered = options.shard != nil || !options.tags.isEmpty || !options.skipTags.isEmpty
        if self.manifest.sets.isEmpty { planManifestItems() }
    }

    /// Whether the manifest's `sets:` still wait to be read: the plan has no items yet.
    public var awaitsSets: Bool { !manifest.sets.isEmpty }

    /// Plans the manifest's items: the plan keeps them, resolved, and the manifest the
    /// rest. Each chunk of the manifest's items is freed once its items are resolved.
    mutating func planManifestItems() {
        var source = ManifestItemChunks()
        swap(&source, &manifest.itemChunks)
        add(&source)
    }

    /// Resolves `source`'s items (chunk by chunk, each freed once resolved) and adds
    /// those the filters select after the plan's.
    mutating func add(_ source: inout ManifestItemChunks) {
        let defaults = manifest.defaults
        items.reserveCapacity(items.count + source.count)
        let filtersTags = !options.tags.isEmpty || !options.skipTags.isEmpty
        // A filtered plan copies its items' texts, so that the manifest's arenas, with
        // the text of every item left out, can go.
        var texts = TextArena.Builder()
        let lists = manifest.checksums.map(\.url)
        while let chunk = source.removeFirstChunk() {
            for item in chunk {
                let index = totalInManifest
                totalInManifest += 1
                if listHeaders.count < lists.count { noteListHeaders(for: item, lists: lists) }
                let tags = item.settings.tags ?? defaults.tags ?? []
                if filtersTags { knownTags.formUnion(tags) }
                if !options.tags.isEmpty, !tags.contains(where: options.tags.contains) { continue }
                if tags.contains(where: options.skipTags.contains) { continue }
                tagSelected += 1
                // The parser has already normalised `dest`.
                let dest = item.dest ?? ""
                if let shard = options.shard, !shard.contains(dest: dest) { continue }
                items.append(
                    planned(
                        item, id: index, tags: tags, texts: isFiltered ? texts.texts(url: item.url, dest: dest) : item.texts))
            }
        }
    }

    /// The headers of the first item served from each `checksums:` list's origin.
    private mutating func noteListHeaders(for item: ManifestItem, lists: [String]) {
        for list in lists where listHeaders[list] == nil {
            guard Redirect.sendsHeaders(to: list, sources: [item.url] + item.mirrors, forward: false) else { continue }
            listHeaders[list] = ItemOptions.mergeHeaders(
                manifest.defaults.headers ?? [], item.settings.headers ?? [], options.headers)
        }
    }

    /// `item` with its options resolved (`ItemOptions.resolve`).
    private func planned(_ item: ManifestItem, id: Int, tags: [String], texts: ItemTexts) -> PlannedItem {
        let overrides = ItemOptions.Overrides(
            connections: self.options.connections, retries: self.options.retries, headers: self.options.headers,
            maxSize: self.options.maxSize)
        var options = ItemOptions.resolve(
            item.settings, defaults: manifest.defaults, overrides: overrides, root: root,
            failure: manifest.failures.isEmpty ? nil : manifest.failures[item.dest ?? ""])
        options.tags = tags
        return PlannedItem(
            id: id, texts: texts, extras: item.extras, sha256: item.packedSHA256, options: options, location: item.location,
            sha256Location: item.sha256Location, sharing: items.last)
    }

    private static func emptySelectionError(options: PlanOptions, knownTags: Set<String>) -> UsageError {
        var filters = options.tags.map { "--tag \($0)" } + options.skipTags.map { "--skip-tag \($0)" }
        if filters.count > 4 { filters = filters.prefix(4) + ["…"] }
        let unknown = (options.tags + options.skipTags).filter { !knownTags.contains($0) }
        var message = "\(filters.joined(separator: " ")) selects no item"
        if !unknown.isEmpty {
            message += " (no item has the tag\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")))"
        }
        if knownTags.isEmpty {
            message += "; the manifest's items have no tags"
        } else {
            let sorted = knownTags.sorted()
            let shown = sorted.prefix(20).joined(separator: ", ") + (sorted.count > 20 ? ", … (\(sorted.count) in all)" : "")
            message += "; the manifest's tags are: \(shown)"
        }
        return UsageError(message)
    }

    /// `--root`, else the manifest's `root` relative to its folder, else its folder.
    static func resolveRoot(manifest: Manifest, override: String?) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        func absolute(_ path: String, relativeTo base: String) -> String {
            let joined = path.hasPrefix("/") ? path : base + "/" + path
            return URL(fileURLWithPath: joined).standardizedFileURL.path
        }
        if let override { return absolute(override, relativeTo: cwd) }
        let manifestFolder = absolute(Paths.parent(of: manifest.path), relativeTo: cwd)
        if let root = manifest.root { return absolute(root, relativeTo: manifestFolder) }
        return manifestFolder
    }
}
