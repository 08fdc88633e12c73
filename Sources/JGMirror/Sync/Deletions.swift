import Foundation

/// What `sync --delete` removes (`Prune`): in the tree, and inside the snapshot each
/// set published as snapshots of its own is building, where a deleted file is simply
/// absent from the set's next snapshot. The set folders themselves are kept in the
/// tree (they are links).
///
/// `find` is the one decision: `sync --delete` carries it out and `plan --delete`
/// prints it, so the two never disagree about a file (docs/deletions.md#when-sync-deletes).
public struct Deletions: Sendable {
    /// What goes inside one set's snapshot being built (`root`).
    struct InSet: Sendable {
        var root: String
        var prune: Prune
    }

    var tree: Prune
    var sets: [InSet] = []
    /// Every file no item produces, before the grace period and the limits spare any:
    /// what the state database records as absent (docs/deletions.md#grace-period).
    public var absent: [String] = []
    /// Files no item produces that stay for their grace period (`keep_removed`).
    var kept: [RemovalGrace.Kept] = []
    /// A failed row for each set whose folder would lose more than `--max-delete`'s
    /// share (`list_shrunk`): none of its files is among the deletions.
    public var shrunk: [ItemResult] = []
    /// Why the run deletes nothing and fetches nothing (past the count, or the root's
    /// share; exit 4), or nil.
    public var refusal: String?

    /// Every file to delete, by its destination (a set's files by their path in the tree).
    public var files: [Prune.File] { sets.flatMap(\.prune.files) + tree.files }

    /// What `--delete` removes from `plan`'s tree under `limits`: files no item
    /// produces (nor a published list), outside the folders of sets whose list is not
    /// trusted, once absent for their grace period (`grace`, from `absences`: since
    /// when each was absent, at `now`); the files of a set published as snapshots of
    /// its own inside the snapshot its items are in (`setRoots`: one folder per such
    /// set, where its items now lie). `limits` count what is deleted. Walks the tree:
    /// call it off the cooperative pool.
    /// `keepRemoved` is `--keep-removed`, `absences` the state database's record, `now`
    /// the run's clock.
    public static func find(
        in plan: Plan, setRoots: [String], limits: DeleteLimits, keepRemoved: Double? = nil,
        absences: [String: Int64] = [:], now: Date = Date()
    ) -> Deletions {
        find(
            in: plan, setRoots: setRoots, limits: limits, grace: RemovalGrace(manifest: plan.manifest, override: keepRemoved),
            absences: absences, now: Int64(now.timeIntervalSince1970))
    }

    static func find(
        in plan: Plan, setRoots: [String], limits: DeleteLimits, grace: RemovalGrace, absences: [String: Int64], now: Int64
    ) -> Deletions {
        let kept = plan.manifest.distrustedFolders
        let lists = plan.manifest.publishGroups
        let tree = Prune.plan(
            root: plan.root, items: plan.items, keeping: kept + plan.manifest.snapshotSets.map(\.folder),
            producing: lists.filter { $0.placedUnder == nil }.flatMap(\.heldDests))
        let inSets = setRoots.map { root in
            let items = plan.items.filter { $0.root == root }
            let published = lists.filter { $0.placedUnder == root }.flatMap(\.heldDests)
            return InSet(root: root, prune: Prune.plan(root: root, items: items, keeping: kept, producing: published))
        }
        var found = Deletions(tree: tree, sets: inSets)
        found.absent = found.files.map(\.path)
        found.spare(grace, absences: absences, now: now)
        let verdict = limits.verdict(
            deleting: found.files, items: plan.items, setFolders: plan.manifest.setFolders, lists: plan.manifest.setLists)
        found.refusal = verdict.refusal
        for set in verdict.shrunk {
            found.tree.files.removeAll { $0.path.hasPrefix(set.folder) }
            for index in found.sets.indices { found.sets[index].prune.files.removeAll { $0.path.hasPrefix(set.folder) } }
            let url = plan.manifest.setLists[set.folder].map(Redactor.redactURLAndQuery) ?? ""
            found.shrunk.append(
                ItemResult(
                    dest: set.folder, url: url, status: .failed, error: ItemError(code: .listShrunk, message: set.message)))
        }
        return found
    }

    /// Leaves out of the deletions each file still within its grace period (`kept`).
    private mutating func spare(_ grace: RemovalGrace, absences: [String: Int64], now: Int64) {
        var spared: [RemovalGrace.Kept] = []
        func split(_ prune: inout Prune) {
            let (delete, kept) = grace.split(prune.files, absences: absences, now: now)
            prune.files = delete
            spared += kept
        }
        for index in sets.indices { split(&sets[index].prune) }
        split(&tree)
        kept = spared
    }

    /// A row for each file kept for its grace period: `kept_removed`, with until when.
    public func keptResults() -> [ItemResult] {
        kept.map { kept in
            let period = Rules.formatDuration(Double(kept.until - kept.since))
            return ItemResult(
                dest: kept.file.path, url: "", status: .keptRemoved, bytes: kept.file.size,
                note:
                    "absent from every list since \(Self.utc(kept.since)); kept for keep_removed \(period), then deleted by the first --delete run",
                keptUntil: Self.utc(kept.until))
        }
    }

    /// `seconds` since the epoch in UTC, as a report's times are written: `2026-11-28T05:20:00Z`.
    static func utc(_ seconds: Int64) -> String { Date(timeIntervalSince1970: Double(seconds)).formatted(.iso8601) }

    /// The results of a run that deletes nothing: each file `delete_skipped`, with why.
    func skipped(because reason: String) -> [ItemResult] {
        sets.flatMap { $0.prune.skipped(because: reason) } + tree.skipped(because: reason)
    }

    /// Deletes the sets' files in their snapshots, then the tree's (`Prune.execute`);
    /// `deleted` is told the count so far after each file.
    func execute(root: String, backup: BackupFolder?, deleted: (Int) -> Void) -> [ItemResult] {
        var results: [ItemResult] = []
        for set in sets {
            let done = results.count
            results += set.prune.execute(root: set.root, backup: backup) { deleted(done + $0) }
        }
        let done = results.count
        return results + tree.execute(root: root, backup: backup) { deleted(done + $0) }
    }
}
