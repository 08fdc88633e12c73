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

    /// Applies defaults, overrides, tag filters and the shard to `manifest`.
    public init(manifest: consuming Manifest, options: PlanOptions = PlanOptions()) {
        // The plan keeps the items, resolved; the manifest keeps the rest.
        var source: [ManifestItem] = []
        swap(&source, &manifest.items)
        self.manifest = manifest
        totalInManifest = source.count
        root = Plan.resolveRoot(manifest: manifest, override: options.root)
        let defaults = manifest.defaults
        var selected: [PlannedItem] = []
        selected.reserveCapacity(source.count)
        for (index, item) in source.enumerated() {
            let tags = item.settings.tags ?? defaults.tags ?? []
            if !options.tags.isEmpty, !tags.contains(where: options.tags.contains) { continue }
            if tags.contains(where: options.skipTags.contains) { continue }
            // The parser has already normalised `dest`.
            let dest = item.dest ?? ""
            if let shard = options.shard, !shard.contains(dest: dest) { continue }
            let connections = options.connections ?? item.settings.connections ?? defaults.connections ?? 6
            let retries = options.retries ?? item.settings.retries ?? defaults.retries ?? max(1, connections / 2)
            selected.append(
                PlannedItem(
                    id: index,
                    url: item.url,
                    mirrors: item.mirrors,
                    dest: dest,
                    root: root,
                    sha256: item.sha256,
                    size: item.size,
                    connections: connections,
                    retries: retries,
                    minSegment: item.settings.minSegment ?? defaults.minSegment ?? 1024 * 1024,
                    timeout: item.settings.timeout ?? defaults.timeout ?? 30,
                    headers: Plan.mergeHeaders(defaults.headers ?? [], item.settings.headers ?? [], options.headers),
                    redact: (defaults.redact ?? []) + (item.settings.redact ?? []),
                    tags: tags,
                    tag: item.tag,
                    insecure: item.settings.insecure ?? defaults.insecure ?? false,
                    forwardHeaders: item.settings.forwardHeaders ?? defaults.forwardHeaders ?? false,
                    location: item.location,
                    sha256Location: item.sha256Location,
                    failure: manifest.failures.isEmpty ? nil : manifest.failures[dest]
                ))
        }
        items = selected
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

    /// Later lists override earlier ones header by header (names compare case-insensitively).
    static func mergeHeaders(_ lists: [HTTPHeader]...) -> [HTTPHeader] {
        var merged: [HTTPHeader] = []
        for list in lists {
            for header in list {
                merged.removeAll { $0.name.caseInsensitiveCompare(header.name) == .orderedSame }
                merged.append(header)
            }
        }
        return merged
    }
}
