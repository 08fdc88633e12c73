import ArgumentParser
import Foundation
import JGMirror

/// `jgmirror plan MANIFEST`: the expanded queue and what sync would do; no transfer.
struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan", abstract: "Print the expanded queue and what sync would do with each item; no network.")

    @OptionGroup var manifestOptions: ManifestOptionGroup

    @Flag(name: .customLong("no-resume"), help: "Show what sync --no-resume would do.")
    var noResume = false

    func run() async throws {
        let plan = manifestOptions.loadPlan(command: "plan")
        var rows: [[String]] = [["ACTION", "SIZE", "CONN", "TAG", "DEST", "URL"]]
        var counts: [String: Int] = [:]
        for item in plan.items {
            let assessment = item.assess(resume: !noResume)
            counts[assessment.action.rawValue, default: 0] += 1
            rows.append([
                assessment.action.rawValue,
                (item.size ?? assessment.size).map(Units.formatBytes) ?? "-",
                String(item.connections),
                item.tag.map(String.init) ?? "-",
                item.dest,
                item.displayURL + (item.mirrors.isEmpty ? "" : " (+\(item.mirrors.count) mirror\(item.mirrors.count == 1 ? "" : "s"))"),
            ])
        }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        var table = ""
        for row in rows {
            for column in 0..<5 { table += row[column].padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0) }
            table += row[5] + "\n"
        }
        FileHandle.standardOutput.write(Data(table.utf8))
        let summary = counts.keys.sorted().map { "\(counts[$0]!) \($0)" }.joined(separator: ", ")
        Terminal.info(
            "plan: \(plan.items.count) of \(plan.totalInManifest) items selected under \(plan.root)"
                + (summary.isEmpty ? "" : ": \(summary)"))
    }
}
