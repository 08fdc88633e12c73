import Foundation

/// The JSON Lines rendering of a run (docs/reports.md#events): one compact object per
/// line, each with `event` and `time` first.
///
/// - `item_started`: `dest`, `tag`, `length`, `connections`, `resumed_from`
/// - `item_progress`: `dest`, `tag`, `bytes_this_run`, `bytes_present`, `expected`, `connections`
/// - `item_finished`: `item`, the item's object exactly as the JSON report has it
/// - `run_finished`: the report without its items (`exit_code`, `totals`, …), always last
///
/// Every field comes from the report model or `SyncEvent`, whose strings are already
/// redacted, so events show no more than the report does.
public enum EventLine {
    /// The line for one sync event, without the line break.
    public static func render(_ event: SyncEvent, at time: Date = Date()) -> String {
        switch event {
        case .itemStarted(let start):
            return line(
                "item_started", time,
                [
                    ("dest", .string(start.dest)), ("tag", .int(start.tag)), ("length", .int(start.length)),
                    ("connections", .int(start.connections)), ("resumed_from", .int(start.resumedFrom)),
                ])
        case .progress(let progress):
            return line(
                "item_progress", time,
                [
                    ("dest", .string(progress.dest)), ("tag", .int(progress.tag)),
                    ("bytes_this_run", .int(progress.bytesThisRun)),
                    ("bytes_present", .int(progress.bytesPresent)), ("expected", .int(progress.expected)),
                    ("connections", .int(progress.connections)),
                ])
        case .itemFinished(let result):
            return line("item_finished", time, [("item", result.json)])
        }
    }

    /// The closing line: the report's head with its final exit code.
    public static func runFinished(_ report: RunReport, at time: Date = Date()) -> String {
        line("run_finished", time, report.summaryMembers)
    }

    private static func line(_ name: String, _ time: Date, _ members: [(String, JSONValue)]) -> String {
        JSONValue.object([("event", .string(name)), ("time", .string(timestamp(time)))] + members).compact()
    }

    /// UTC with milliseconds: several events share a second.
    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
