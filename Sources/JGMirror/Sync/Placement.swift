import Foundation
import Synchronization

/// Moves verified part files onto their destinations durably, in batches.
///
/// A destination only ever receives bytes that were verified and synced (SPEC §4).
/// Syncing small files one after another costs a journal commit apiece, so commits
/// that arrive while a batch is being written wait and go together: the batch's
/// files are `fdatasync`ed concurrently, which the filesystem folds into one journal
/// commit, then renamed, then each distinct directory is `fsync`ed once. (`syncfs`
/// would also batch, but flushes every dirty page of the filesystem, including a
/// large download still in progress.)
final class Placement: Sendable {
    struct Commit: Sendable {
        var part: String
        /// The part file's open descriptor, when the caller still holds it.
        var file: PartFile?
        var destination: String
        /// Resume state to remove after the rename, when one may exist.
        var state: String?
        var done: @Sendable (TransferError?) -> Void
    }

    private let queue = DispatchQueue(label: "jgmirror.placement")
    private let pending = Locked<[Commit]>([])
    /// Sync files and folders; off only under `--no-fsync`.
    private let durable: Bool

    init(durable: Bool) { self.durable = durable }

    /// Syncs, renames `part` onto `destination`, removes `state`; then calls `done`.
    func commit(_ commit: Commit) {
        let first = pending.withLock { list -> Bool in
            list.append(commit)
            return list.count == 1
        }
        if first { queue.async { self.drain() } }
    }

    /// Keeps rejected bytes as `DEST.jgbad` for inspection; DEST is untouched.
    static func quarantine(part: String, destination: String, state: String) -> String {
        let bad = destination + ".jgbad"
        rename(part, bad)
        unlink(state)
        return bad
    }

    private func drain() {
        let batch = pending.withLock { list -> [Commit] in
            defer { list.removeAll() }
            return list
        }
        guard !batch.isEmpty else { return }
        var failures = durable ? Self.syncAll(batch) : Array(repeating: nil, count: batch.count)
        var directories = Set<String>()
        for (index, commit) in batch.enumerated() where failures[index] == nil {
            if rename(commit.part, commit.destination) != 0 {
                failures[index] = .local(errno: errno, path: commit.destination, doing: "cannot rename onto")
                continue
            }
            if let state = commit.state { unlink(state) }
            directories.insert(Paths.parent(of: commit.destination))
        }
        if durable { directories.forEach(Paths.syncFolder) }
        for (index, commit) in batch.enumerated() { commit.done(failures[index]) }
        if pending.withLock({ !$0.isEmpty }) { queue.async { self.drain() } }
    }

    /// `fdatasync`s every part file of the batch at once (not `concurrentPerform`, which
    /// stops at the core count: the more syncs wait together, the more of them one
    /// journal commit covers); a failure per file, or nil.
    private static func syncAll(_ batch: [Commit]) -> [TransferError?] {
        let syncs = ResultSlots<TransferError?>(count: batch.count)
        let group = DispatchGroup()
        for (index, commit) in batch.enumerated() {
            DispatchQueue.global().async(group: group) { syncs.set(index, sync(commit)) }
        }
        group.wait()
        return syncs.values()
    }

    private static func sync(_ commit: Commit) -> TransferError? {
        let fd = commit.file?.fd ?? open(commit.part, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .local(errno: errno, path: commit.part, doing: "cannot open") }
        defer { if commit.file == nil { close(fd) } }
        return fdatasync(fd) == 0 ? nil : .local(errno: errno, path: commit.part, doing: "cannot sync")
    }
}
