import CLinux
import Foundation

/// Retiring old snapshots, and what `next` is known to hold (docs/publishing.md#snapshot).
///
/// `keep` counts published snapshots. Once a run publishes, the snapshots past the
/// newest `keep` are retired: the newest of them becomes the next run's `next`,
/// brought to the new snapshot's state at once, and marked a copy of it. A run that
/// then changes nothing finds `next` ready, publishes nothing and retires nothing, and
/// leaves `next` marked for the run after it. A run starts by retiring whatever is
/// still past `keep` (a lowered `--keep`, a publishing run killed before it retired)
/// and a `next` that ran out of space, so a tree whose disk filled recovers by itself
/// once the release fits.
extension SnapshotTree {
    /// A mark beside `next`: it holds exactly what the published snapshot named in the
    /// mark holds (a run that changed nothing left it, or a publishing run made it).
    var unchangedMark: String { folder + "/.next-unchanged" }
    /// A mark beside `next`: the run that left it ran out of space (`disk_full`).
    var fullMark: String { folder + "/.next-full" }

    /// The published snapshots older than the newest `keep` (`current` the newest of
    /// them all), oldest first.
    func pastKeep(_ keep: Int, current: String?) -> [String] {
        let currentNumber = current.flatMap(Self.number) ?? 0
        return Array(ids().filter { (Self.number(of: $0) ?? 0) <= currentNumber && $0 != current }.dropLast(max(0, keep - 1)))
    }

    /// Removes the published snapshots past `keep` while `next` (`building`) is kept:
    /// its files are looked at before and after, so that their records follow the
    /// ctime the removal moves (`Prepared.linked`).
    func retire(beyond keep: Int, current: String?, keepingRecordsOf building: String, step: (Step) -> Void) -> Prepared {
        var prepared = Prepared(scope: scope)
        let old = pastKeep(keep, current: current)
        guard !old.isEmpty else { return prepared }
        var linked = Self.stats(under: building, skippingRootNames: false).map {
            Linked(dest: $0.key, before: $0.value, after: $0.value)
        }
        for id in old where (try? FileManager.default.removeItem(atPath: folder + "/" + id)) != nil {
            prepared.pruned.append(id)
            step(.pruning)
        }
        Self.settle(&linked, in: building)
        prepared.linked = linked
        return prepared
    }

    /// Once a snapshot is published: retires the published snapshots past `keep`, the
    /// newest of them reused as the next run's `next` (marked a copy of the new one),
    /// the others removed. Returns the files the reuse linked and the snapshots
    /// retired, for the state database (`StateStore.refresh`).
    func retireAfterPublishing(keep: Int, step: @escaping (Step) -> Void) -> Prepared {
        var prepared = Prepared(scope: scope)
        guard let current = currentID() else { return prepared }
        var old = pastKeep(keep, current: current)
        let cloning = folder + "/" + Self.cloningName
        Self.clear(cloning)
        if access(building, F_OK) != 0, let base = old.last, rename(folder + "/" + base, cloning) == 0 {
            old.removeLast()
            step(.pruning)
            do throws(SyncError) {
                prepared.linked = try Self.reuse(cloning, toMatch: folder + "/" + current, step: step)
                // Marked before it is named `next`: a kill in between leaves a mark a
                // run ignores without `next`, never a `next` that looks changed.
                Self.mark(unchangedMark, with: current)
                prepared.pruned = [base]
                prepared = try finished(prepared, in: cloning)
            } catch {
                prepared = Self.gaveUp(reusing: base, in: folder, cloning: cloning, error, into: prepared)
            }
        }
        for id in old where (try? FileManager.default.removeItem(atPath: folder + "/" + id)) != nil {
            prepared.pruned.append(id)
            step(.pruning)
        }
        return prepared
    }

    /// After a reuse of snapshot `id` (renamed to `cloning`) failed with `error`: the
    /// snapshot is removed, as it would have been, or, when it cannot be, goes back
    /// under its name, as a snapshot that could not be pruned always stayed.
    static func gaveUp(reusing id: String, in folder: String, cloning: String, _ error: SyncError, into prepared: Prepared)
        -> Prepared
    {
        var prepared = prepared
        prepared.warning = "snapshot \(id) not reused for the new one (\(error.localizedDescription)); linked afresh"
        prepared.pruned.removeAll { $0 == id }
        if (try? FileManager.default.removeItem(atPath: cloning)) != nil {
            prepared.pruned.append(id)
        } else {
            rename(cloning, folder + "/" + id)
        }
        prepared.linked = []
        return prepared
    }

    /// Removes a `next` that cannot be finished (`building`), through `cloning` so that
    /// a kill part-way leaves nothing a run would resume.
    static func discard(_ building: String, via cloning: String) throws(SyncError) {
        guard rename(building, cloning) == 0 else {
            throw .local("cannot remove \(building): \(String(cString: strerror(errno)))")
        }
        clear(cloning)
    }

    /// Writes `text` at `path` (a mark), durably: a temporary file renamed over it, and
    /// its folder synced.
    static func mark(_ path: String, with text: String) {
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8)) else { return }
        let fd = open(temporary, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
        syncFolder(Paths.parent(of: path))
    }

    /// The text of the mark at `path`, which is removed (durably) before anything else
    /// happens to `next`; nil when there is none.
    static func take(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        unlink(path)
        syncFolder(Paths.parent(of: path))
        return String(decoding: data.prefix(256), as: UTF8.self)
    }
}
