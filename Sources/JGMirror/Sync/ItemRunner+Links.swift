import CLinux
import Foundation

/// The `link:` items of a run, placed once every file has its result (docs/publishing.md#ordered).
extension ItemRunner {
    /// What a run does with one `link:` item.
    enum LinkFate: Equatable {
        /// Placed: made, or replacing another link.
        case place
        /// Already on disk with its target.
        case unchanged
        /// Left as it is on disk (the run stopped, or a file below its target is missing).
        case held(note: String?)
        /// Refused: it would lead outside the root or into the state folder (`unsafe_path`).
        case refused(String)
    }

    /// Places every `link:` item once the files have their results (`rows`), and
    /// records the links in the state database. A link that would change is left as it
    /// is while a file below its target did not reach its place this run, so that it
    /// never leads readers to a half-made folder. A link whose target, followed through
    /// the links this run leaves in place and the symlinks on disk, leads outside the
    /// root or into the state folder fails `unsafe_path`; a link jgmirror placed that
    /// leads there is removed (docs/safety.md#links). Returns each link's row, and a
    /// `deleted` result per link removed that no item makes.
    func placeLinks(after rows: [ResultRow?]) -> (rows: [(Int, ResultRow)], removed: [ItemResult]) {
        let (fates, resolver) = decideLinks(after: rows)
        // What jgmirror placed before and this run leaves alone: removed when it leads out.
        let kept = Set(links.filter { [.place, .unchanged].contains(fates[$0]) }.map { items[$0].dest })
        let removed = removeEscapingLinks(managedLinksOnRecord().filter { !kept.contains($0.key) }, resolver: resolver)
        let removedDests = Set(removed.filter { $0.status == .deleted }.map(\.dest))
        var results: [(Int, ResultRow)] = []
        var recorded: [(dest: String, target: String)] = []
        var changedFolders = Set<String>()
        for index in links {
            let item = items[index]
            guard let target = item.link, let fate = fates[index] else { continue }
            var result = result(item, status: .downloaded)
            let started = Date()
            do throws(TransferError) {
                switch fate {
                case .unchanged:
                    result.status = .unchanged
                    recorded.append((item.dest, target))
                case .held(let note):
                    result.status = .skipped
                    result.note = note
                case .refused(let problem):
                    let gone =
                        removedDests.contains(item.dest)
                        ? "; the link jgmirror had placed there, which led out too, was removed" : ""
                    throw TransferError(code: .unsafePath, message: problem + gone)
                case .place:
                    try place(item, target: target, changing: &changedFolders)
                    recorded.append((item.dest, target))
                }
            } catch {
                result.status = .failed
                result.error = ItemError(code: error.code, message: error.message)
            }
            result.durationS = Date().timeIntervalSince(started)
            events.yield(.itemFinished(result))
            results.append((index, ResultRow(result, of: item)))
        }
        if options.durable { for folder in changedFolders { root.syncFolder(folder) } }
        if let failure = opening.store?.saveLinks(recorded) { warnings.withLock { $0.append(failure) } }
        if let failure = opening.store?.remove(Array(removedDests)) { warnings.withLock { $0.append(failure) } }
        // A refused item says what became of its link in its own row.
        let itemDests = Set(links.map { items[$0].dest })
        let others = removed.filter { !itemDests.contains($0.dest) }
        for result in others { events.yield(.itemFinished(result)) }
        return (results, others)
    }

    /// Places the link of `item` to `target` (its folder made once a run), keeping a
    /// mirrored file it replaces in `--backup-dir`.
    private func place(_ item: PlannedItem, target: String, changing changedFolders: inout Set<String>) throws(TransferError) {
        let folder = Paths.parent(of: item.path)
        if !madeFolders.withLock({ $0.contains(folder) }) {
            try root.makeFolders(folder)
            madeFolders.withLock { _ = $0.insert(folder) }
        }
        try backup?.keepReplaced(item.path, in: root, as: item.dest)
        // The part file's name: reserved, and never used by a link item otherwise.
        try root.placeLink(item.path, target: target, temporary: item.partPath)
        changedFolders.insert(folder)
    }

    /// What becomes of each link item (by index), and the view of the tree the run
    /// leaves: every link it places or finds in place, over the symlinks on disk. A
    /// refused link is left out of the view and judged again until none changes, since
    /// another link may have led out only through it.
    func decideLinks(after rows: [ResultRow?]) -> (fates: [Int: LinkFate], resolver: LinkResolver) {
        // Stopped (fail-fast), or interrupted: the next run finishes the files and then
        // places the links.
        let stopped = state.withLock { $0.stopped } || rows.contains { $0?.outcome.status == .interrupted }
        let placedStatuses: Set<ItemStatus> = [.downloaded, .unchanged, .unverified]
        let unfinished = rows.indices.compactMap { index -> String? in
            guard let row = rows[index], !placedStatuses.contains(row.outcome.status) else { return nil }
            return items[index].dest
        }
        let rootPath = root.path
        var resolver = LinkResolver(planned: [:], folders: snapshotSetFolders, root: rootPath) {
            Symlink.target(rootPath + "/" + $0)
        }
        var fates: [Int: LinkFate] = [:]
        for index in links {
            let item = items[index]
            guard let target = item.link else { continue }
            if stopped {
                fates[index] = .held(note: nil)
            } else if (try? root.linkTarget(item.path)) == target {
                fates[index] = .unchanged
            } else if let blocker = Self.unfinished(unfinished, below: target, of: item.dest) {
                fates[index] = .held(note: "kept as it was: '\(blocker)', below its target, did not reach its place this run")
            } else {
                fates[index] = .place
            }
            if fates[index] == .place || fates[index] == .unchanged { resolver.planned[item.dest] = target }
        }
        var changed = true
        while changed {
            changed = false
            for index in links where fates[index] == .place || fates[index] == .unchanged {
                let item = items[index]
                guard let problem = resolver.problem(item.link ?? "", of: item.dest) else { continue }
                fates[index] = .refused(problem)
                resolver.planned[item.dest] = nil
                changed = true
            }
        }
        return (fates, resolver)
    }

    /// Removes each of `managed` (links jgmirror placed: destination → target) that is
    /// still on disk with its target and leads outside the root or into the state
    /// folder through `resolver`'s view: one an older version placed, or one this
    /// run refused to place again. Returns a `deleted` result for each, or `failed`.
    func removeEscapingLinks(_ managed: [String: String], resolver: LinkResolver) -> [ItemResult] {
        var removed: [ItemResult] = []
        for (dest, target) in managed.sorted(by: { $0.key < $1.key }) {
            guard let problem = resolver.problem(target, of: dest) else { continue }
            do {
                guard try root.removeLink(root.path + "/" + dest, ifTarget: target) else { continue }
                removed.append(
                    ItemResult(
                        dest: dest, url: "", status: .deleted, note: "removed: \(problem)", link: target))
            } catch {
                removed.append(
                    ItemResult(
                        dest: dest, url: "", status: .failed, error: ItemError(code: error.code, message: error.message),
                        link: target))
            }
        }
        return removed
    }

    /// The links on record in the state database (destination → target), read once.
    func managedLinksOnRecord() -> [String: String] {
        managedLinks.withLock { links in
            if links == nil { links = (try? opening.store?.links()) ?? [:] }
            return links ?? [:]
        }
    }

    /// Whether `item`'s destination itself is a symlink that a `link:` item placed and
    /// that still points where it was made to (any other symlink stays `unsafe_path`).
    func isManagedLink(_ item: PlannedItem) -> Bool {
        guard let current = try? root.linkTarget(item.path) else { return false }
        return managedLinksOnRecord()[item.dest] == current
    }

    /// The first of `dests` at or below the path a link at `dest` to `target` leads to.
    static func unfinished(_ dests: [String], below target: String, of dest: String) -> String? {
        guard !dests.isEmpty, case .success(let resolved) = LinkTarget.resolve(target, dest: dest) else { return nil }
        return dests.first { resolved.isEmpty || $0 == resolved || $0.hasPrefix(resolved + "/") }
    }
}
