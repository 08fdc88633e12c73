import Foundation

/// Places the files of each `PublishGroup` phase by phase (docs/publishing.md#published-lists),
/// once every item of the run has its result and before any `link:` item or
/// deletion: a reader who follows a list (or an apt client an index) finds each file
/// it names in place, with the listed bytes.
///
/// A phase is placed only when every file of the earlier phases reached its place this
/// run (placed, or already there); otherwise it and every later phase keep their
/// previous copies, as does a group of a run stopped early or one that holds only
/// part of the group (`--tag`, `--shard`). Items of a later phase were fetched and
/// verified like any other, and their bytes wait (`ItemRunner.held`) to be placed
/// with their phase, or dropped. Files of bytes the run holds (a list, a signature, a
/// `Release`) are placed atomically (a temporary file, synced, renamed over the old
/// one), one after another: between two renames a reader may meet the new list beside
/// the old signature, so a reader who checks a signature reads the pair again when it
/// fails.
struct GroupPublisher: Sendable {
    let groups: [PublishGroup]
    let root: RootDirectory
    /// `fsync` the files and their folder (off with `--no-fsync`).
    let durable: Bool
    /// Where a file about to be replaced is hard-linked first (`--backup-dir`), as a
    /// replaced file is.
    var backup: BackupFolder?

    /// What placing the groups gave: a result per held file, the final rows of the
    /// items whose bytes waited for their phase, and lines for the report's warnings.
    struct Outcome {
        var results: [ItemResult] = []
        var rows: [(index: Int, result: ItemResult)] = []
        var warnings: [String] = []
    }

    /// What the publisher asks of the run's items.
    struct Items {
        /// The plan's items.
        let items: [PlannedItem]
        /// Their results so far, in the plan's order.
        let rows: [ResultRow?]
        /// Places the waiting bytes of item `index` and returns its final result.
        let release: (Int) -> ItemResult
        /// Drops the waiting bytes of item `index`, keeping the previous copy; returns its
        /// final result, which says why (`note`).
        let drop: (Int, String) -> ItemResult
    }

    private static let inPlace: Set<ItemStatus> = [.downloaded, .unchanged, .unverified]

    /// Places each group's phases in order while the ones before are in place.
    /// `stopped` after a cancel or fail-fast stop.
    func publish(_ run: Items, stopped: Bool) -> Outcome {
        var outcome = Outcome()
        guard !groups.isEmpty else { return outcome }
        var byDest: [String: Int] = [:]
        byDest.reserveCapacity(run.items.count)
        for (index, item) in run.items.enumerated() { byDest[item.dest] = index }
        for group in groups {
            publish(group, run: run, byDest: byDest, stopped: stopped, into: &outcome)
        }
        return outcome
    }

    private func publish(_ group: PublishGroup, run: Items, byDest: [String: Int], stopped: Bool, into outcome: inout Outcome) {
        let name = Redactor.redactURLAndQuery(group.name)
        // A run that holds part of the group's items cannot tell that the others are in
        // place: the group is left to a run that holds them all.
        let absent = group.phases.joined().first { $0.source == .item && byDest[$0.dest] == nil }
        var blocker: String? = stopped ? "the run was stopped before every file was in place" : nil
        if let absent {
            outcome.warnings.append("\(name) was not published: this run does not hold '\(absent.dest)', one of its files")
            blocker = "this run does not hold '\(absent.dest)'"
        }
        var placed = Set<String>()
        var notServed = Set<String>()
        for (number, phase) in group.phases.enumerated() {
            // Items of the first phase were placed as they came; later ones wait here,
            // and none of a phase is placed unless every one of them verified: a reader
            // holding the previous Release never meets half of the next one's indexes.
            if number > 0, blocker == nil { blocker = unready(phase, run: run, byDest: byDest) }
            for file in phase where blocker == nil {
                if file.optional, let skipped = leftOut(file, notServed: &notServed, run: run, byDest: byDest) {
                    if case .sameAs = file.source { outcome.results.append(skipped) }
                    placed.insert(file.dest)
                    continue
                }
                guard let problem = place(file, gated: number > 0, group: group, run: run, byDest: byDest, into: &outcome)
                else {
                    placed.insert(file.dest)
                    continue
                }
                blocker = problem
            }
            if let blocker {
                for file in phase where !placed.contains(file.dest) {
                    hold(file, gated: number > 0, name: name, blocker: blocker, run: run, byDest: byDest, into: &outcome)
                }
            }
        }
    }

    /// Why the items of `phase` cannot all be placed (one did not verify this run, and is
    /// not an optional file the server lacks), or nil.
    private func unready(_ phase: [PublishedFile], run: Items, byDest: [String: Int]) -> String? {
        let waiting: Set<ItemStatus> = [.downloaded, .unverified, .unchanged]
        for file in phase where file.source == .item {
            guard let index = byDest[file.dest] else { return "this run does not hold '\(file.dest)'" }
            let status = run.rows[index]?.outcome.status ?? .failed
            if waiting.contains(status) || (file.optional && status == .notServed) { continue }
            return "'\(file.dest)' did not reach its place this run"
        }
        return nil
    }

    /// The row of an optional `file` the server does not have (`not_served`), or of its
    /// `sameAs` copy, which is left out with it; nil when `file` is there to place. The
    /// destinations left out are added to `notServed`.
    private func leftOut(_ file: PublishedFile, notServed: inout Set<String>, run: Items, byDest: [String: Int])
        -> ItemResult?
    {
        switch file.source {
        case .item:
            guard let index = byDest[file.dest], run.rows[index]?.outcome.status == .notServed else { return nil }
            notServed.insert(file.dest)
            return ItemResult(dest: file.dest, url: file.url, status: .notServed)
        case .sameAs(let source):
            guard notServed.contains(source) else { return nil }
            notServed.insert(file.dest)
            let note = "'\(source)', the file it is a copy of, is not served"
            return ItemResult(dest: file.dest, url: Redactor.redactURLAndQuery(file.url), status: .notServed, note: note)
        case .bytes:
            return nil
        }
    }

    /// Places `file` (an item's waiting bytes when `gated`); nil when it is in place,
    /// else why the phases after it wait.
    private func place(
        _ file: PublishedFile, gated: Bool, group: PublishGroup, run: Items, byDest: [String: Int], into outcome: inout Outcome
    ) -> String? {
        let name = Redactor.redactURLAndQuery(file.url.isEmpty ? group.name : file.url)
        let base = group.placedUnder ?? root.path
        switch file.source {
        case .item:
            guard let index = byDest[file.dest] else { return "this run does not hold '\(file.dest)'" }
            var status = run.rows[index]?.outcome.status ?? .failed
            if gated, status == .downloaded || status == .unverified {
                let result = run.release(index)
                outcome.rows.append((index, result))
                status = result.status
            }
            return Self.inPlace.contains(status) ? nil : "'\(file.dest)' did not reach its place this run"
        case .bytes(let bytes):
            let result = place(bytes, at: file.dest, under: base, url: name)
            outcome.results.append(result)
            return result.status == .failed ? "'\(file.dest)' could not be placed" : nil
        case .sameAs(let source):
            let result = link(file.dest, to: source, under: base, url: name)
            outcome.results.append(result)
            return result.status == .failed ? "'\(file.dest)' could not be placed" : nil
        }
    }

    /// Leaves `file`'s previous copy where it is, because of `blocker`: an item's waiting
    /// bytes are dropped, a held file is reported skipped.
    private func hold(
        _ file: PublishedFile, gated: Bool, name: String, blocker: String, run: Items, byDest: [String: Int],
        into outcome: inout Outcome
    ) {
        let note = "the previous copy stays: \(blocker)"
        switch file.source {
        case .item:
            guard gated, let index = byDest[file.dest], let status = run.rows[index]?.outcome.status,
                status == .downloaded || status == .unverified
            else { return }
            outcome.rows.append((index, run.drop(index, note)))
        case .bytes, .sameAs:
            let url = Redactor.redactURLAndQuery(file.url.isEmpty ? name : file.url)
            outcome.results.append(ItemResult(dest: file.dest, url: url, status: .skipped, note: note))
        }
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

    /// Makes `dest` below `base` a hard link to `source`, placed before it, unless it is
    /// one already: a second name for the same verified bytes.
    private func link(_ dest: String, to source: String, under base: String, url: String) -> ItemResult {
        let path = base + "/" + dest
        let target = base + "/" + source
        var result = ItemResult(dest: dest, url: url, status: .downloaded)
        guard let targetStat = root.status(target) else {
            result.status = .failed
            result.error = ItemError(code: .ioError, message: "cannot link \(path) to \(target): it is not in place")
            return result
        }
        result.bytes = Int64(targetStat.st_size)
        if let present = root.status(path), present.st_ino == targetStat.st_ino, present.st_dev == targetStat.st_dev {
            result.status = .unchanged
            return result
        }
        do throws(TransferError) {
            let folder = Paths.parent(of: path)
            try root.makeFolders(folder)
            try backup?.keepReplaced(path, in: root, as: dest)
            try root.replaceWithLink(path, to: target, temporary: path + ".jgpart")
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
