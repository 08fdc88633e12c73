import CLinux
import Foundation

/// The `link:` items of a run, placed once every file has its result (SPEC §10b).
extension ItemRunner {
    /// Places every `link:` item once the files have their results (`rows`), and
    /// records the links in the state database. A link that would change is left as it
    /// is while a file below its target did not reach its place this run, so that it
    /// never leads readers to a half-made folder. Returns each link's row.
    func placeLinks(after rows: [ResultRow?]) -> [(Int, ResultRow)] {
        // Stopped (fail-fast), or interrupted: the next run finishes the files and then
        // places the links.
        let stopped = state.withLock { $0.stopped } || rows.contains { $0?.outcome.status == .interrupted }
        let placedStatuses: Set<ItemStatus> = [.downloaded, .unchanged, .unverified]
        let unfinished = rows.indices.compactMap { index -> String? in
            guard let row = rows[index], !placedStatuses.contains(row.outcome.status) else { return nil }
            return items[index].dest
        }
        var results: [(Int, ResultRow)] = []
        var recorded: [(dest: String, target: String)] = []
        var changedFolders = Set<String>()
        for index in links {
            let item = items[index]
            guard let target = item.link else { continue }
            var result = result(item, status: .downloaded)
            let started = Date()
            if stopped {
                result.status = .skipped
            } else {
                do throws(TransferError) {
                    if try root.linkTarget(item.path) == target {
                        result.status = .unchanged
                        recorded.append((item.dest, target))
                    } else if let blocker = Self.unfinished(unfinished, below: target, of: item.dest) {
                        result.status = .skipped
                        result.note = "kept as it was: '\(blocker)', below its target, did not reach its place this run"
                    } else {
                        let folder = Paths.parent(of: item.path)
                        if !madeFolders.withLock({ $0.contains(folder) }) {
                            try root.makeFolders(folder)
                            madeFolders.withLock { _ = $0.insert(folder) }
                        }
                        // A mirrored file the link replaces is kept as a replaced file is.
                        try backup?.keepReplaced(item.path, in: root, as: item.dest)
                        // The part file's name: reserved, and never used by a link item otherwise.
                        try root.placeLink(item.path, target: target, temporary: item.partPath)
                        changedFolders.insert(folder)
                        recorded.append((item.dest, target))
                    }
                } catch {
                    result.status = .failed
                    result.error = ItemError(code: error.code, message: error.message)
                }
            }
            result.durationS = Date().timeIntervalSince(started)
            events.yield(.itemFinished(result))
            results.append((index, ResultRow(result, of: item)))
        }
        if options.durable { for folder in changedFolders { root.syncFolder(folder) } }
        if let failure = opening.store?.saveLinks(recorded) { warnings.withLock { $0.append(failure) } }
        return results
    }

    /// Whether `item`'s destination itself is a symlink that a `link:` item placed and
    /// that still points where it was made to (any other symlink stays `unsafe_path`).
    func isManagedLink(_ item: PlannedItem) -> Bool {
        guard let current = try? root.linkTarget(item.path) else { return false }
        let managed = managedLinks.withLock { links in
            if links == nil { links = (try? opening.store?.links()) ?? [:] }
            return links?[item.dest]
        }
        return managed == current
    }

    /// The first of `dests` at or below the path a link at `dest` to `target` leads to.
    static func unfinished(_ dests: [String], below target: String, of dest: String) -> String? {
        guard !dests.isEmpty, case .success(let resolved) = LinkTarget.resolve(target, dest: dest) else { return nil }
        return dests.first { resolved.isEmpty || $0 == resolved || $0.hasPrefix(resolved + "/") }
    }
}
