import Foundation

/// What `--max-delete` lets one `sync --delete` remove (docs/deletions.md#guards): at most `count`
/// files, and at most `share` of the files under the root and under each set's
/// folder. A set over its share fails alone (`list_shrunk`, exit 1) and the rest goes
/// on; a run over the count, or the root's share, deletes nothing and fetches nothing
/// (exit 4).
///
/// The share is what catches a cut list: 5 of 30 lines left would delete 25 files,
/// far under any count an operator sets for a large tree, but 83 % of the set's folder.
public struct DeleteLimits: Sendable, Equatable {
    /// Most files one run deletes; 0 forbids deleting.
    public var count = Rules.maxDeleteCount.defaultValue
    /// Largest fraction (0 to 1) of a folder's files one run deletes, where a folder's
    /// files are those its items will hold plus those to delete.
    public var share = Double(Rules.maxDeleteShare.defaultValue) / 100

    public init() {}

    /// `--max-delete` values: each is a count (`1000`) or a share (`10%`), and sets
    /// only its own limit; the other keeps its default.
    public init(parsing values: [String]) throws(UsageError) {
        for value in values {
            if value.hasSuffix("%") {
                guard let percent = Units.parseDecimal(String(value.dropLast())), (0...100).contains(percent) else {
                    throw UsageError("--max-delete takes a count such as 1000 or a share from 0% to 100%, not '\(value)'")
                }
                share = percent / 100
            } else {
                guard let count = Units.parseWholeNumber(value) else {
                    throw UsageError("--max-delete takes a count such as 1000 or a share from 0% to 100%, not '\(value)'")
                }
                self.count = count
            }
        }
    }

    /// What the limits make of deleting `files`: each set whose folder would lose more
    /// than `share` fails alone (`shrunk`, the deepest folder judged first, its files
    /// then left out), and the rest is refused as a whole (`refusal`) past `count` or
    /// past `share` of the root (docs/deletions.md#guards).
    struct Verdict: Equatable {
        /// Each set folder (`"dir/"`) over the share, with the line that says what shrank.
        var shrunk: [Shrunk] = []
        /// Why the run deletes nothing and fetches nothing (exit 4), or nil.
        var refusal: String?
    }

    /// A set whose folder would lose more than the share.
    struct Shrunk: Equatable {
        var folder: String
        var message: String
    }

    /// Judges deleting `files` (`lists`: each set folder's list URL, for the message).
    /// A set at the root is the whole root: its share is the root's.
    func verdict(
        deleting files: [Prune.File], items: [PlannedItem], setFolders: [String], lists: [String: String] = [:]
    ) -> Verdict {
        var verdict = Verdict()
        guard !files.isEmpty else { return verdict }
        var remaining = files
        let deepestFirst = Set(setFolders.filter { !$0.isEmpty }).sorted {
            ($0.utf8.count(where: { $0 == UInt8(ascii: "/") }), $0) > ($1.utf8.count(where: { $0 == UInt8(ascii: "/") }), $1)
        }
        for folder in deepestFirst {
            let deleting = remaining.count(where: { $0.path.hasPrefix(folder) })
            guard deleting > 0 else { continue }
            let kept = items.count(where: { $0.dest.hasPrefix(folder) })
            let fraction = Double(deleting) / Double(deleting + kept)
            guard fraction > share else { continue }
            let list = lists[folder].map { " (\(Redactor.redactURLAndQuery($0)))" } ?? ""
            let message =
                "the list of the set at '\(Rules.printable(folder))'\(list) now names \(kept) file\(kept == 1 ? "" : "s") "
                + "where the folder holds \(deleting + kept): --delete would remove \(deleting) of them "
                + "(\(Self.percent(fraction))), more than --max-delete \(Self.percent(share)), so none was deleted and "
                + "the set's list was not published; if the list shrank on purpose, a run with a --max-delete share "
                + "above \(Self.percent(fraction)) deletes them"
            verdict.shrunk.append(Shrunk(folder: folder, message: message))
            remaining.removeAll { $0.path.hasPrefix(folder) }
        }
        verdict.refusal = refusal(deleting: remaining, items: items)
        return verdict
    }

    /// Why deleting `files` would go past the limits on the whole root, or nil: first
    /// the count, then the share of the root.
    private func refusal(deleting files: [Prune.File], items: [PlannedItem]) -> String? {
        guard !files.isEmpty else { return nil }
        let advice = "nothing was deleted or fetched (check the manifest and its lists, then raise --max-delete)"
        if files.count > count {
            return count == 0
                ? "--delete would remove \(files.count) file\(files.count == 1 ? "" : "s") and --max-delete 0 forbids deleting; nothing was deleted or fetched"
                : "--delete would remove \(files.count) files, more than --max-delete \(count); \(advice)"
        }
        let fraction = Double(files.count) / Double(files.count + items.count)
        guard fraction > share else { return nil }
        return
            "--delete would remove \(files.count) of the \(files.count + items.count) files under the root "
            + "(\(Self.percent(fraction))), more than --max-delete \(Self.percent(share)); \(advice)"
    }

    /// `0.8333` as "83%".
    static func percent(_ fraction: Double) -> String {
        let value = fraction * 100
        return value.rounded() == value ? "\(Int(value))%" : String(format: "%.1f%%", value)
    }
}
