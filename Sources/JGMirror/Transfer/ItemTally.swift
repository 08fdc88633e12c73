/// What one item's report says about how its transfer went (docs/reports.md#json-report), counted
/// while it runs: requests made, connections used, bytes resumed, restarts, and
/// the last failure and note worth showing. Held in its item's `EngineBound` fields:
/// touched on the engine thread only, checked.
struct ItemTally {
    /// Bytes reused from an earlier run.
    var resumedFrom: Int64 = 0
    /// Most connections used at once.
    private(set) var peakConnections = 0
    /// 1 + every retry, every switch to a mirror and every replacement connection.
    var attempts = 1
    /// Times the item started over because the remote changed.
    private(set) var restarts = 0
    /// Times a server refused ranges for a file it still has (`ResponseJudge.Decision.singleStream`).
    private(set) var refusals = 0
    /// Body bytes libcurl delivered for the item, written or not.
    var bytesReceived: Int64 = 0
    /// Why resume state was discarded or the item restarted, when it was.
    var note: String?
    /// The last failure a connection met; the item's failure when none finishes.
    var lastError: TransferError?

    /// The most restarts of each kind before the item fails: as `changed` after
    /// changes, as `range` after refusals.
    static let restartLimit = 3

    /// Notes that `connections` are open now.
    mutating func using(_ connections: Int) { peakConnections = max(peakConnections, connections) }

    /// Forgets the connections counted so far: their requests were dropped before
    /// they brought a byte of the file.
    mutating func forgetConnections() { peakConnections = 0 }

    /// Counts a start from zero (`counts`: the remote changed; else it refused
    /// ranges for now), noting why; once that kind passed `restartLimit`, the
    /// item's failure instead: `changed`, or `range` for a server that refuses
    /// ranges and whose whole-file answers keep ending short (the file did not change).
    mutating func restart(because reason: String, counts: Bool) -> TransferError? {
        note = reason
        if counts {
            restarts += 1
            guard restarts > Self.restartLimit else { return nil }
            return TransferError(code: .changed, message: "remote file kept changing during the download (\(reason))")
        }
        refusals += 1
        guard refusals > Self.restartLimit else { return nil }
        let last = lastError.map { " (last: \($0.message))" } ?? ""
        return TransferError(
            code: .range,
            message: "the server refused byte ranges \(refusals) times and no whole-file answer arrived whole\(last)")
    }

    /// The outcome the item reports.
    func outcome(
        _ status: TransferOutcome.Status, length: Int64?, bytesDownloaded: Int64, hasState: Bool, validators: Validators
    ) -> TransferOutcome {
        TransferOutcome(
            status: status, length: length, bytesDownloaded: bytesDownloaded, bytesReceived: bytesReceived,
            resumedFrom: resumedFrom,
            connections: max(peakConnections, 1), attempts: attempts, note: note, hasState: hasState, validators: validators)
    }
}
