import Foundation

/// What `--max-delete` lets one `sync --delete` remove (docs/deletions.md#guards): at most `count`
/// files, and at most `share` of the files under the root and under each set's
/// folder. A run that would remove more deletes nothing and fetches nothing (exit 4).
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

    /// Why deleting `files` would go past the limits, or nil: first the count, then the
    /// share of each of `setFolders` (`"dir/"`), then of the root.
    func refusal(deleting files: [Prune.File], items: [PlannedItem], setFolders: [String]) -> String? {
        guard !files.isEmpty else { return nil }
        let advice = "nothing was deleted or fetched (check the manifest and its lists, then raise --max-delete)"
        if files.count > count {
            return count == 0
                ? "--delete would remove \(files.count) file\(files.count == 1 ? "" : "s") and --max-delete 0 forbids deleting; nothing was deleted or fetched"
                : "--delete would remove \(files.count) files, more than --max-delete \(count); \(advice)"
        }
        // A set's folder first: it names the list to look at.
        for folder in setFolders.filter({ !$0.isEmpty }) + [""] {
            let deleting = folder.isEmpty ? files.count : files.count(where: { $0.path.hasPrefix(folder) })
            guard deleting > 0 else { continue }
            let kept = folder.isEmpty ? items.count : items.count(where: { $0.dest.hasPrefix(folder) })
            let fraction = Double(deleting) / Double(deleting + kept)
            guard fraction > share else { continue }
            let place = folder.isEmpty ? "the root" : "'\(Rules.printable(folder))'"
            return
                "--delete would remove \(deleting) of the \(deleting + kept) files under \(place) (\(Self.percent(fraction))), "
                + "more than --max-delete \(Self.percent(share)); \(advice)"
        }
        return nil
    }

    /// `0.8333` as "83%".
    static func percent(_ fraction: Double) -> String {
        let value = fraction * 100
        return value.rounded() == value ? "\(Int(value))%" : String(format: "%.1f%%", value)
    }
}
