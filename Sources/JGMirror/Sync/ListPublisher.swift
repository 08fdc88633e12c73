import Foundation

/// Places the verified lists of `publish: true` sets (docs/publishing.md#published-lists), after
/// every file of the run has its result and before any `link:` item or deletion: a reader who
/// follows a list finds each file it names in place, with the listed bytes.
///
/// A set any of whose files did not reach its place this run (failed, interrupted,
/// skipped) keeps its previous list and signature, as does a set whose list failed
/// (that one never gets here). A list is placed atomically (a temporary file, synced,
/// renamed over the old one), then its signature the same way: between the two
/// renames a reader may meet the new list beside the old signature, so a reader who
/// checks a signature reads the pair again when it fails.
struct ListPublisher: Sendable {
    let lists: [PublishedList]
    let root: RootDirectory
    /// `fsync` the files and their folder (off with `--no-fsync`).
    let durable: Bool
    /// Where a list about to be replaced is hard-linked first (`--backup-dir`), as a
    /// replaced file is.
    var backup: BackupFolder?

    /// What placing every list gave: a result per list and signature file, and the
    /// lines for the report's warnings.
    struct Outcome {
        var results: [ItemResult] = []
        var warnings: [String] = []
    }

    /// Places each list whose members all reached their place, per `rows` (the run's
    /// results, in the order of `items`); `stopped` after a cancel or fail-fast stop.
    func publish(items: [PlannedItem], rows: [ResultRow?], stopped: Bool) -> Outcome {
        var outcome = Outcome()
        guard !lists.isEmpty else { return outcome }
        var statuses: [String: ItemStatus] = [:]
        statuses.reserveCapacity(items.count)
        for (index, item) in items.enumerated() { statuses[item.dest] = rows[index]?.outcome.status }
        let placedStatuses: Set<ItemStatus> = [.downloaded, .unchanged, .unverified]
        for list in lists {
            let url = Redactor.redactURLAndQuery(list.url)
            // A run that holds part of the set's files (`--tag`, `--shard`) cannot tell
            // that the others are in place: the list is left to a run that holds them all.
            if let absent = list.members.first(where: { statuses.index(forKey: $0) == nil }) {
                outcome.warnings.append("\(url) was not published: this run does not hold '\(absent)', one of its files")
                continue
            }
            var blocker = stopped ? "the run was stopped before every file was in place" : nil
            if blocker == nil,
                let unplaced = list.members.sorted().first(where: { !placedStatuses.contains(statuses[$0] ?? .failed) })
            {
                blocker = "'\(unplaced)' did not reach its place this run"
            }
            var files = [(list.dest, list.bytes)]
            if let dest = list.signatureDest, let bytes = list.signatureBytes { files.append((dest, bytes)) }
            if let blocker {
                for (dest, _) in files {
                    outcome.results.append(
                        ItemResult(dest: dest, url: url, status: .skipped, note: "the previous copy stays: \(blocker)"))
                }
                continue
            }
            var failed = false
            for (dest, bytes) in files {
                if failed {
                    // The list did not change: neither may its signature.
                    outcome.results.append(
                        ItemResult(
                            dest: dest, url: url, status: .skipped, note: "the previous copy stays: the list could not be placed")
                    )
                    continue
                }
                let result = place(bytes, at: dest, under: list.placedUnder ?? root.path, url: url)
                failed = result.status == .failed
                outcome.results.append(result)
            }
        }
        return outcome
    }

    /// Writes `bytes` at `dest` below `base` (the root, or a set's snapshot being
    /// built) unless the file there holds them already.
    private func place(_ bytes: Data, at dest: String, under base: String, url: String) -> ItemResult {
        let path = base + "/" + dest
        let digest = SHA256.hex(of: [UInt8](bytes))
        var result = ItemResult(
            dest: dest, url: url, status: .downloaded, bytes: Int64(bytes.count), sha256Actual: digest)
        if let present = read(path, limit: bytes.count), present == bytes {
            result.status = .unchanged
            return result
        }
        do throws(TransferError) {
            let folder = Paths.parent(of: path)
            try root.makeFolders(folder)
            try backup?.keepReplaced(path, in: root, as: dest)
            // The item's part-file name: reserved for jgmirror beside every destination.
            try root.replaceFile(path, with: bytes, temporary: path + ".jgpart", exclusive: false, durable: durable)
            if durable { root.syncFolder(folder) }
        } catch {
            result.status = .failed
            result.error = ItemError(code: error.code, message: error.message)
        }
        return result
    }

    /// The regular file at `path` when it holds at most `limit` bytes; nil otherwise.
    private func read(_ path: String, limit: Int) -> Data? {
        guard let fd = try? root.openFile(path, flags: O_RDONLY | O_NONBLOCK) else { return nil }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        guard let data = try? handle.read(upToCount: limit + 1) else { return limit == 0 ? Data() : nil }
        return data.count <= limit ? data : nil
    }
}
