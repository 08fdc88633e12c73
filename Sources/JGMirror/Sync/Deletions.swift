/// What `sync --delete` removes (`Prune`): in the tree, and inside the snapshot each
/// set published as snapshots of its own is building, where a deleted file is simply
/// absent from the set's next snapshot. The set folders themselves are kept in the
/// tree (they are links).
struct Deletions: Sendable {
    /// What goes inside one set's snapshot being built (`root`).
    struct InSet: Sendable {
        var root: String
        var prune: Prune
    }

    var tree: Prune
    var sets: [InSet] = []

    /// Every file to delete, by its destination (a set's files by their path in the tree).
    var files: [Prune.File] { sets.flatMap(\.prune.files) + tree.files }

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
