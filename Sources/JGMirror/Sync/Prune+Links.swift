import Foundation

extension Prune {
    /// The managed links (`managed`: destination → target, from the state database)
    /// that no item of `items` produces any more, outside `keeping`'s folders, sorted:
    /// what `--delete` removes besides files. Any other symlink is never removed.
    public static func staleLinks(items: [PlannedItem], managed: [String: String], keeping kept: [String] = []) -> [String] {
        guard !managed.isEmpty else { return [] }
        let produced = Set(items.map(\.dest))
        return managed.keys.filter { dest in !produced.contains(dest) && !kept.contains { dest.hasPrefix($0) } }.sorted()
    }

    /// Removes each stale managed link (`staleLinks`) that is still the link a
    /// `link:` item placed: reached from the root without following any symlink, and
    /// still pointing at the recorded target. One changed since (another target, a
    /// file, a folder) is someone else's now: left alone. Every stale record is then
    /// forgotten. Returns a `deleted` result per link removed, `failed` per link that
    /// could not be.
    public static func removeStaleLinks(root path: String, items: [PlannedItem], store: StateStore?, keeping kept: [String] = [])
        -> [ItemResult]
    {
        guard let store, let managed = try? store.links() else { return [] }
        let stale = staleLinks(items: items, managed: managed, keeping: kept)
        guard !stale.isEmpty, let root = try? RootDirectory(path: path) else { return [] }
        var results: [ItemResult] = []
        var forgotten: [String] = []
        // Folders an item needs stay, even empty (as `plan` leaves them).
        var itemFolders = Set<String>()
        for item in items {
            var folder = Paths.parent(of: item.dest)
            while !folder.isEmpty, itemFolders.insert(folder).inserted { folder = Paths.parent(of: folder) }
        }
        for dest in stale {
            guard let target = managed[dest] else { continue }
            do {
                if try root.removeLink(path + "/" + dest, ifTarget: target) {
                    results.append(ItemResult(dest: dest, url: "", status: .deleted, link: target))
                    // The folders the link leaves empty go too, as a pruned file's do.
                    var folder = Paths.parent(of: dest)
                    while !folder.isEmpty, !itemFolders.contains(folder), root.removeEmptyFolder(path + "/" + folder) {
                        folder = Paths.parent(of: folder)
                    }
                }
                forgotten.append(dest)
            } catch {
                results.append(
                    ItemResult(
                        dest: dest, url: "", status: .failed, error: ItemError(code: error.code, message: error.message),
                        link: target))
            }
        }
        store.remove(forgotten)
        return results
    }
}
