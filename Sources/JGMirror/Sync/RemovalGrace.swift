import Foundation

/// How long a file that no item produces any more stays before `--delete` removes it
/// (`keep_removed`, docs/deletions.md#grace-period): a reader who read a list or an apt
/// index a minute before the sync still asks for what it named. A pure value: the run
/// gives it the time each file was first found absent (the state database's record)
/// and the time now, and it says which files go and until when the others stay.
struct RemovalGrace: Sendable, Equatable {
    /// A set's folder (`""`: the root) and its grace period in seconds.
    struct Folder: Sendable, Equatable {
        var folder: String
        var seconds: Double
    }

    /// The sets' folders, deepest first: a file takes the period of the deepest set
    /// folder it lies in.
    let folders: [Folder]
    /// The period of a file outside every set's folder: `defaults:`' `keep_removed`, else 0.
    let elsewhere: Double

    /// The periods `manifest` gives (once its sets are expanded), or `override`
    /// (`--keep-removed`) for every file.
    init(manifest: Manifest, override: Double? = nil) {
        let byDepth = manifest.setKeepRemoved.map { Folder(folder: $0.key, seconds: override ?? $0.value) }
        folders = byDepth.sorted {
            ($0.folder.utf8.count(where: { $0 == UInt8(ascii: "/") }), $0.folder) > (
                $1.folder.utf8.count(where: { $0 == UInt8(ascii: "/") }), $1.folder
            )
        }
        elsewhere = override ?? manifest.keepRemoved ?? 0
    }

    init(folders: [Folder], elsewhere: Double) {
        self.folders = folders
        self.elsewhere = elsewhere
    }

    /// The grace period of the file at `path`, in seconds.
    func period(of path: String) -> Double {
        folders.first { path.hasPrefix($0.folder) }?.seconds ?? elsewhere
    }

    /// Until when (seconds since the epoch) the file at `path`, absent from every list
    /// since `since`, stays; nil when it may go at `now`.
    func keptUntil(_ path: String, absentSince since: Int64, now: Int64) -> Int64? {
        let period = period(of: path)
        guard period > 0 else { return nil }
        let until = since + Int64(period.rounded(.up))
        return now < until ? until : nil
    }

    /// A file kept for its grace period, with when it may go.
    struct Kept: Sendable, Equatable {
        var file: Prune.File
        /// Since when the file has been absent from every list.
        var since: Int64
        /// When the first `--delete` run after it may delete the file.
        var until: Int64
    }

    /// Splits `files` (what no item produces) into those to delete now and those kept:
    /// `absences` says since when each was absent (a file without a record is absent
    /// since `now`, the run that first misses it).
    func split(_ files: [Prune.File], absences: [String: Int64], now: Int64) -> (delete: [Prune.File], kept: [Kept]) {
        var delete: [Prune.File] = []
        var kept: [Kept] = []
        for file in files {
            let since = absences[file.path] ?? now
            if let until = keptUntil(file.path, absentSince: since, now: now) {
                kept.append(Kept(file: file, since: since, until: until))
            } else {
                delete.append(file)
            }
        }
        return (delete, kept)
    }
}
