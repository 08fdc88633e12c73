/// A sync's results as the run keeps them until its report is written: one compact
/// row per planned item, in plan order, then whole results for what is not a planned
/// item (files `--delete` removed). Each `ItemResult` is rebuilt when it is read, one
/// at a time: built all at once, 100,000 results held 208 bytes each plus a URL and
/// two checksums of their own, about 40 MB, for as long as the report lived.
struct ReportItems: Sendable {
    /// Every row is set by the time a report holds them.
    private let rows: [ResultRow?]
    private let planned: [PlannedItem]
    /// Results after the rows.
    var extra: [ItemResult] = []

    init(rows: [ResultRow?], of planned: [PlannedItem]) {
        precondition(rows.count == planned.count, "one row per planned item")
        self.rows = rows
        self.planned = planned
    }

    var count: Int { rows.count + extra.count }

    /// Calls `body` with each result in order, building one at a time.
    func forEach(_ body: (ItemResult) throws -> Void) rethrows {
        for index in rows.indices { try body(rows[index]!.result(for: planned[index])) }
        for result in extra { try body(result) }
    }

    /// Calls `body` with each item's status, bytes fetched and error, in order,
    /// building no result.
    func forEachOutcome(_ body: (ItemStatus, ItemResult.Fetched, ItemError?) -> Void) {
        for row in rows {
            let outcome = row!.outcome
            body(outcome.status, outcome.bytes, outcome.error)
        }
        for result in extra { body(result.status, result.fetched, result.error) }
    }

    /// Whether a result changed the tree: a file placed (or a list, or a link), a file
    /// deleted. A snapshot run without one has nothing new to publish.
    var changeTree: Bool {
        for row in rows where row!.changesTree { return true }
        return extra.contains(where: \.changesTree)
    }

    /// Whether a result failed with `code`.
    func contains(failure code: ErrorCode) -> Bool {
        var found = false
        forEachOutcome { _, _, error in found = found || error?.code == code }
        return found
    }

    /// Every result, built.
    var all: [ItemResult] {
        var results: [ItemResult] = []
        results.reserveCapacity(count)
        forEach { results.append($0) }
        return results
    }
}
