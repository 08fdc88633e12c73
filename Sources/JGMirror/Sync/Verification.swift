import Foundation

/// `jgmirror verify`: hashes what is on disk against the plan, on all cores, with
/// no network (SPEC §2, §7).
public enum Verification {
    /// Checks every item; missing or mismatching files give exit 3.
    public static func run(plan: Plan, threads: Int = ProcessInfo.processInfo.activeProcessorCount) throws(SyncError) -> RunReport {
        let started = Date()
        do { try RootConfinement.check(plan) } catch { throw .manifest(error) }
        let items = plan.items
        // A root that cannot be opened holds none of the files.
        let root = try? RootDirectory(path: plan.root)
        let results = concurrentMap(count: items.count, threads: threads) { verify(items[$0], root: root) }
        return RunReport(
            command: "verify", manifest: plan.manifest.path, started: started, finished: Date(),
            items: results)
    }

    /// Reads the item through `root`, never through a symlink below it.
    static func verify(_ item: PlannedItem, root: RootDirectory?) -> ItemResult {
        let begin = Date()
        var result = ItemResult(
            dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: .verified,
            sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.insecure)
        var info = stat()
        var opened: Int32 = -1
        if let root {
            do { opened = try root.openFile(item.path, flags: O_RDONLY | O_NONBLOCK) } catch where error.code == .unsafePath {
                result.status = .failed
                result.error = ItemError(code: error.code, message: error.message)
                return result
            } catch {}
        }
        defer { if opened >= 0 { close(opened) } }
        guard opened >= 0, fstat(opened, &info) == 0 else {
            result.status = .missing
            result.error = ItemError(code: .missing, message: "\(item.path) does not exist")
            return result
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            result.status = .missing
            result.error = ItemError(
                code: .missing, message: "\(item.path) is \(Paths.kind(of: info.st_mode)), not a regular file")
            return result
        }
        result.bytes = Int64(info.st_size)
        do {
            if let expected = item.sha512 {
                let actual = try FileHasher.hex(fd: opened, path: item.path, algorithm: .sha512)
                result.sha512Actual = actual
                if expected != actual {
                    result.status = .mismatch
                    result.error = ItemError(code: .checksumMismatch, message: "SHA-512 is \(actual), the manifest expects \(expected)")
                }
            } else if let expected = item.sha256 {
                let actual = try FileHasher.sha256(fd: opened, path: item.path)
                result.sha256Actual = actual
                if expected != actual {
                    result.status = .mismatch
                    result.error = ItemError(code: .checksumMismatch, message: "SHA-256 is \(actual), the manifest expects \(expected)")
                }
            } else {
                result.sha256Actual = try FileHasher.sha256(fd: opened, path: item.path)
                result.status = .unverified
            }
            if let size = item.size, size != Int64(info.st_size), result.status != .mismatch {
                result.status = .mismatch
                result.error = ItemError(code: .sizeMismatch, message: "\(info.st_size) bytes on disk, the manifest says \(size)")
            }
        } catch {
            result.status = .failed
            result.error = ItemError(code: .ioError, message: error.localizedDescription)
        }
        result.durationS = Date().timeIntervalSince(begin)
        return result
    }
}
