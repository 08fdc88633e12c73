import Foundation

/// `jgmirror verify`: hashes what is on disk against the plan, on all cores, with
/// no network (docs/commands.md#verify).
public enum Verification {
    /// Checks every item; missing or mismatching files give exit 3. Every file it
    /// hashes is recorded in the tree's state database, when it has one, so the next
    /// sync's quick check trusts what was just verified. Files are hashed as computing
    /// jobs on `threads` threads of a pool of its own; the caller's task waits without
    /// holding one of Swift's shared threads.
    public static func run(plan: Plan, threads: Int = ProcessInfo.processInfo.activeProcessorCount) async throws(SyncError)
        -> RunReport
    {
        let started = Date()
        let pool = WorkPool(computingThreads: threads)
        defer { pool.close() }
        // A tree published as snapshots is checked where `current` points
        // (docs/publishing.md#snapshot).
        let stateRoot = plan.root
        let plan = plan.publishedTree()
        let confined = await pool.run { () -> ManifestError? in
            do throws(ManifestError) { _ = try RootConfinement.check(plan, placing: false) } catch { return error }
            return nil
        }
        if let confined { throw .manifest(confined) }
        let items = plan.items
        // A root that cannot be opened holds none of the files.
        let root = try? RootDirectory(path: plan.root)
        let checked = await pool.map(count: items.count) { index in verify(items[index], root: root) }
        var report = RunReport(
            command: .verify, manifest: plan.manifest.path, started: started, finished: Date(),
            items: checked.map(\.0) + plan.manifest.listFailures.map(\.result))
        let warning = await pool.run { record(checked.map(\.1), of: items, stateRoot: stateRoot) }
        if let warning { report.warnings.append(warning) }
        return report
    }

    /// Records the files `verify` hashed (`records`, by item) in the tree's state
    /// database, when it has one; a line for the report's warnings when it could not.
    private static func record(_ records: [FileRecord?], of items: [PlannedItem], stateRoot: String) -> String? {
        guard let store = StateStore.openExisting(root: stateRoot) else { return nil }
        defer { store.close() }
        // The remote's validators stay as the last sync saw them, while the bytes do.
        let known = (try? store.recordTable()) ?? RecordTable()
        let verified = zip(items, records).compactMap { item, record -> FileRecord? in
            guard var record else { return nil }
            // The same bytes as recorded (by the digest this run computed), for the
            // same URL: the other digest on record still holds, and so do the validators.
            if let old = known[record.dest], old.isFor(url: item.displayURL),
                record.sha512 != nil ? old.sha512 == record.sha512 : old.sha256 == record.sha256
            {
                record.sha256 = record.sha256 ?? old.sha256
                record.sha512 = record.sha512 ?? old.sha512
                record.etag = old.etag
                record.lastModified = old.lastModified
                record.checkedAt = old.checkedAt
                // The same stat as a settled placement's record (`RecordSettling`): no
                // write since, so its proof that the file is past the racy window holds.
                if old.stat == record.stat, let settled = old.verifiedAt {
                    record.verifiedAt = max(record.verifiedAt ?? settled, settled)
                }
                return record
            }
            // Without a checksum, a record is what says which bytes came from which
            // URL: verify cannot vouch for other bytes, or for another URL, so the old
            // record stays, and the next sync fetches the file again.
            return item.hasChecksum ? record : nil
        }
        return store.save(verified)
    }

    /// A `link:` item is verified when its destination is a symlink to exactly its
    /// target; a missing one is `missing`, anything else `mismatch` (both exit 3).
    private static func verifyLink(_ item: PlannedItem, target: String, root: RootDirectory?, into result: inout ItemResult) {
        let current: String?
        do { current = try root?.linkTarget(item.path) } catch {
            result.status = .failed
            result.error = ItemError(code: error.code, message: error.message)
            return
        }
        if current == target { return }
        if let current {
            result.status = .mismatch
            result.error = ItemError(
                code: .linkMismatch,
                message: "\(item.path) points at '\(Rules.printable(current))', the manifest says '\(target)'")
        } else if let info = root?.status(item.path) {
            result.status = .mismatch
            result.error = ItemError(
                code: .linkMismatch, message: "\(item.path) is \(Paths.kind(of: info.st_mode)), not a link to '\(target)'")
        } else {
            result.status = .missing
            result.error = ItemError(code: .missing, message: "\(item.path) does not exist")
        }
    }

    /// Reads the item through `root`, never through a symlink below it; returns its
    /// result and the record of what was hashed.
    static func verify(_ item: PlannedItem, root: RootDirectory?) -> (ItemResult, FileRecord?) {
        let begin = Date()
        var result = ItemResult(
            dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: .verified,
            sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.options.insecure, link: item.link)
        // A list whose signature failed vouches for nothing it names.
        if let failure = item.failure {
            result.status = .failed
            result.error = failure
            return (result, nil)
        }
        if let target = item.link {
            verifyLink(item, target: target, root: root, into: &result)
            result.durationS = Date().timeIntervalSince(begin)
            return (result, nil)
        }
        var info = stat()
        var opened: Int32 = -1
        if let root {
            do { opened = try root.openFile(item.path, flags: O_RDONLY | O_NONBLOCK) } catch  where error.code == .unsafePath {
                result.status = .failed
                result.error = ItemError(code: error.code, message: error.message)
                return (result, nil)
            } catch {}
        }
        defer { if opened >= 0 { close(opened) } }
        guard opened >= 0, fstat(opened, &info) == 0 else {
            result.status = .missing
            result.error = ItemError(code: .missing, message: "\(item.path) does not exist")
            return (result, nil)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            result.status = .missing
            result.error = ItemError(
                code: .missing, message: "\(item.path) is \(Paths.kind(of: info.st_mode)), not a regular file")
            return (result, nil)
        }
        let record = hash(item, fd: opened, info: info, into: &result)
        result.durationS = Date().timeIntervalSince(begin)
        return (result, record)
    }

    /// Hashes the open file `fd` of `item` (`info` its status) into `result`; returns
    /// the record of what was hashed, when the file did not change while it was read.
    private static func hash(_ item: PlannedItem, fd opened: Int32, info: stat, into result: inout ItemResult) -> FileRecord? {
        result.bytes = Int64(info.st_size)
        let before = FileStat(info)
        var record: FileRecord?
        do {
            if item.hasChecksum {
                let digests = try item.checkDigests(fd: opened)
                result.sha256Actual = digests.sha256
                result.sha512Actual = digests.sha512
                if let mismatch = digests.mismatch {
                    result.status = .mismatch
                    result.error = ItemError(code: .checksumMismatch, message: mismatch)
                }
            } else {
                result.sha256Actual = try FileHasher.sha256(fd: opened, path: item.path)
                result.status = .unverified
            }
            var after = stat()
            if result.sha256Actual != nil || result.sha512Actual != nil, fstat(opened, &after) == 0, FileStat(after) == before {
                let now = FileRecord.now()
                record = FileRecord(
                    dest: item.dest, stat: before, sha256: result.sha256Actual, sha512: result.sha512Actual, url: item.displayURL,
                    verifiedAt: now, checkedAt: now)
            }
            if let size = item.size, size != Int64(info.st_size), result.status != .mismatch {
                result.status = .mismatch
                result.error = ItemError(code: .sizeMismatch, message: "\(info.st_size) bytes on disk, the manifest says \(size)")
            }
        } catch {
            result.status = .failed
            result.error = ItemError(code: .ioError, message: error.localizedDescription)
        }
        return record
    }
}
