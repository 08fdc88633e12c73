import CLinux
import Foundation
import Synchronization

/// Moves verified part files onto their destinations durably, in batches (one at a
/// time, on the caller's thread, under `--no-fsync`).
///
/// A destination only ever receives bytes that were verified and synced
/// (docs/sync.md#fetching-and-placing). Syncing small files one after another costs a journal
/// commit (or, without a journal, a device flush) apiece, so commits that arrive while a batch is
/// being written wait and go together: the batch is synced at once, then renamed, then
/// each distinct directory is `fsync`ed once. Then the placed files' records go to
/// the run's `RecordBatcher`: only after the rename, so a crash in between leaves an
/// old record (or none), which never matches the new file's stat, and the next run
/// hashes it. With a `RecordSettling`, the records wait there for the file system's
/// clock to pass the placed files' timestamps, so the next run trusts them at once.
final class Placement: Sendable {
    struct Commit: Sendable {
        var part: String
        var destination: String
        /// Resume state to remove after the rename, when one may exist.
        var state: String?
        /// What to record once the file is in place (nil: nothing).
        var record: FileRecord?
        /// Its data was synced after its last byte was written (a large download).
        var synced = false
        /// The file, when its body was held in memory (`TransferOutcome.body`): `commit`
        /// writes it on the caller's thread, to `part` (a new file), or without syncs
        /// to an unnamed file linked in as `destination`.
        var contents: [UInt8]?
        var done: @Sendable (TransferError?) -> Void
    }

    /// Commits that arrive while a batch is placed wait, and go together.
    private let batches: WorkPool.Lane<Commit>
    private let placer: Placer
    private let durable: Bool

    init(
        durable: Bool, root: RootDirectory, pool: WorkPool, records: RecordBatcher? = nil,
        dataSync: @escaping @Sendable (Int32) -> Int32 = { fdatasync($0) }, beforeRecording: (@Sendable () -> Bool)? = nil,
        backup: BackupFolder? = nil, settling: RecordSettling? = nil
    ) {
        let placer = Placer(
            durable: durable, root: root, records: records, dataSync: dataSync, beforeRecording: beforeRecording, backup: backup,
            settling: settling)
        self.placer = placer
        self.durable = durable
        batches = WorkPool.Lane(on: pool) { placer.place($0) }
    }

    /// Writes `contents` (a body held in memory) to `part`, syncs, renames `part` onto
    /// `destination`, removes `state`; then calls `done`.
    ///
    /// A held body is written on the caller's thread, so that no body waits in memory
    /// for a batch's sync, and files are written while the batch before them syncs.
    /// Without syncs (`--no-fsync`) there is nothing to share between files, and the
    /// whole commit is placed on the caller's thread, a thread hop less per file; a
    /// held body then needs no part file where the file system has unnamed ones
    /// (`RootDirectory.linkNewFile`).
    func commit(_ commit: Commit) {
        var commit = commit
        if let contents = commit.contents {
            commit.contents = nil
            if !durable, placer.link(contents, commit) { return }
            if let failure = placer.write(contents, to: commit.part) { return commit.done(failure) }
        }
        if durable {
            batches.add(commit)
        } else {
            placer.place([commit])
        }
    }

    /// Keeps rejected bytes for inspection; DEST is untouched. A sync keeps them in its
    /// `quarantine`, as `dest` (docs/safety.md#quarantine); a one-off download, which
    /// has no state folder, as `DEST.jgbad`. Bytes held in memory (`contents`) are
    /// written there through `part`, a new part file (one another process holds is
    /// left to it). Returns where the bytes are, for the report: "bytes kept in PATH",
    /// or why they could not be kept.
    static func quarantine(
        part: String, destination: String, state: String, root: RootDirectory, contents: [UInt8]? = nil,
        in quarantine: Quarantine? = nil, as dest: String = ""
    ) -> String {
        root.unlink(state)
        if let contents, let failure = Placer.write(contents, to: part, root: root) {
            return "bytes not kept (\(failure.message))"
        }
        let kept = quarantine?.place(of: dest) ?? destination + Quarantine.legacySuffix
        do throws(TransferError) {
            if let quarantine { try quarantine.keep(part, in: root, as: dest) } else { try root.rename(part, to: kept) }
        } catch {
            if contents != nil { root.unlink(part) }  // written just now: ours
            return "bytes not kept (\(error.message))"
        }
        return "bytes kept in \(kept)"
    }

    /// What placing a batch needs, apart from the queue that feeds it batches.
    private struct Placer: Sendable {
        /// Sync files and folders; off only under `--no-fsync`.
        let durable: Bool
        /// Every path is opened and renamed relative to it, never through a symlink.
        let root: RootDirectory
        let records: RecordBatcher?
        /// `fdatasync`; tests count calls.
        let dataSync: @Sendable (Int32) -> Int32
        /// Runs between the renames and the database write; false skips the write, as a
        /// process killed there would (tests).
        let beforeRecording: (@Sendable () -> Bool)?
        /// Where a file about to be replaced is hard-linked first (`--backup-dir`).
        let backup: BackupFolder?
        /// Where placed files' records wait for the clock before `records` (nil: straight there).
        let settling: RecordSettling?

        /// One batch on placement's queue.
        func place(_ batch: [Commit]) {
            // Each folder is opened once per batch, for `syncfs` and for its own `fsync`
            // (a part file and its destination share the folder).
            var folders: [String: Folder?] = [:]
            if durable {
                for path in Set(batch.map { Paths.parent(of: $0.destination) }) {
                    folders[path] = .some(Folder(path, root: root))
                }
            }
            var failures = [TransferError?](repeating: nil, count: batch.count)
            if durable { syncAll(batch, folders: folders, into: &failures) }
            var renamedInto = Set<String>()
            for (index, commit) in batch.enumerated() where failures[index] == nil {
                do {
                    try backup?.keepReplaced(
                        commit.destination, in: root, as: String(commit.destination.dropFirst(root.path.count + 1)))
                    try root.rename(commit.part, to: commit.destination)
                } catch {
                    failures[index] = error
                    continue
                }
                if let state = commit.state { root.unlink(state) }
                renamedInto.insert(Paths.parent(of: commit.destination))
            }
            for path in renamedInto { if let folder = folders[path] ?? nil { fsync(folder.fd) } }
            record(batch.indices.filter { failures[$0] == nil }.map { (batch[$0], nil) })
            for (index, commit) in batch.enumerated() { commit.done(failures[index]) }
        }

        /// Places a body held in memory as an unnamed file linked in at its destination
        /// (`RootDirectory.linkNewFile`): no part file to create, lock, rename and look
        /// up again (2000 × 16 KiB on ext4: bench/RESULTS.md, "Seventh round"). Unsynced:
        /// for runs without syncs. False, with nothing done, where the file system has no
        /// unnamed files or the destination exists.
        func link(_ contents: [UInt8], _ commit: Commit) -> Bool {
            let linked = contents.withUnsafeBytes { bytes -> Result<stat?, TransferError> in
                do throws(TransferError) { return .success(try root.linkNewFile(bytes, at: commit.destination)) } catch {
                    return .failure(error)
                }
            }
            switch linked {
            case .failure(let error):
                commit.done(error)
            case .success(nil):
                return false
            case .success(let info?):
                if let state = commit.state { root.unlink(state) }
                record([(commit, info)])
                commit.done(nil)
            }
            return true
        }

        /// Writes a body held in memory to `part`, a new part file (one another process
        /// holds is left to it, `PartFile`); a part file whose write failed is removed.
        func write(_ contents: [UInt8], to part: String) -> TransferError? { Self.write(contents, to: part, root: root) }

        static func write(_ contents: [UInt8], to part: String, root: RootDirectory) -> TransferError? {
            let file: PartFile
            do { file = try PartFile(path: part, fresh: true, root: root) } catch { return error }
            let failure = contents.withUnsafeBytes { bytes -> TransferError? in
                do throws(TransferError) { try file.write(bytes, at: 0) } catch { return error }
                return nil
            }
            if failure != nil { root.unlink(part) }
            return failure
        }

        /// Records each placed file with the stat it has now: `known`, or looked up.
        private func record(_ placedFiles: [(commit: Commit, known: stat?)]) {
            guard let records, beforeRecording?() ?? true else { return }
            var placed: [(record: FileRecord, path: String)] = []
            for (commit, known) in placedFiles {
                guard var record = commit.record, let info = known ?? root.status(commit.destination),
                    (info.st_mode & S_IFMT) == S_IFREG
                else { continue }
                let stat = FileStat(info)
                let now = FileRecord.now()
                record.stat = stat
                record.verifiedAt = record.sha256 == nil && record.sha512 == nil ? nil : now
                record.checkedAt = now
                placed.append((record, commit.destination))
            }
            if let settling { settling.add(placed) } else { records.add(placed.map(\.record)) }
        }

        /// Makes every part file of the batch durable that is not yet (`Commit.synced`).
        /// One file: its own `fdatasync`.
        /// Several: one `syncfs` per filesystem they are on, which writes them all and
        /// flushes the device once (2000 × 16 KiB: 0.30 s instead of 0.48 s with
        /// concurrent `fdatasync`s, on an ext4 without a journal to fold those into one
        /// commit). It also writes whatever else is dirty there, such as a large download
        /// in progress, whose checkpoints would sync it within a second anyway. Where a
        /// `syncfs` fails, its files are synced one by one, so the error lands on the
        /// right item. (No part file is held open while it waits for its batch: a slow
        /// batch would otherwise pile up descriptors up to the process limit.)
        private func syncAll(_ batch: [Commit], folders: [String: Folder?], into failures: inout [TransferError?]) {
            let unsynced = batch.indices.filter { !batch[$0].synced }
            guard unsynced.count > 1 else {
                for index in unsynced { failures[index] = sync(batch[index].part) }
                return
            }
            // A new file is on its folder's filesystem; `syncfs` goes through the folder.
            var byFilesystem: [UInt64: (folder: Folder, members: [Int])] = [:]
            for index in unsynced {
                guard let folder = folders[Paths.parent(of: batch[index].destination)] ?? nil else {
                    failures[index] = sync(batch[index].part)
                    continue
                }
                byFilesystem[folder.device, default: (folder, [])].members.append(index)
            }
            for (folder, members) in byFilesystem.values where jg_syncfs(folder.fd) != 0 {
                for index in members { failures[index] = sync(batch[index].part) }
            }
        }

        private func sync(_ part: String) -> TransferError? {
            let fd: Int32
            do { fd = try root.openFile(part, flags: O_RDONLY) } catch { return error }
            defer { close(fd) }
            return dataSync(fd) == 0 ? nil : .local(errno: errno, path: part, doing: "cannot sync")
        }

        /// An open folder and the filesystem it is on, closed when released.
        private final class Folder {
            let fd: Int32
            let device: UInt64

            init?(_ path: String, root: RootDirectory) {
                guard let fd = try? root.openFolder(path) else { return nil }
                self.fd = fd
                var info = stat()
                guard fstat(fd, &info) == 0 else {
                    close(fd)
                    return nil
                }
                device = UInt64(info.st_dev)
            }

            deinit { close(fd) }
        }
    }
}
