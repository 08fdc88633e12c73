/// A finished item's result in the compact form a run keeps until its report is
/// built: the status and numbers inline, the rare parts (an error, a note, a digest
/// other than the expected one) boxed, and the names, URL and tags left with the
/// planned item they came from. An `ItemResult` is 208 bytes plus its own strings;
/// a row is 56, so a 100,000-item run holds 5 MB of rows instead of 21 MB of results.
struct ResultRow: Sendable {
    var status: ItemStatus
    /// `sha256Actual` is the item's expected checksum (verified and matching).
    private var actualIsExpected: Bool
    /// The same for `sha512Actual`.
    private var actual512IsExpected: Bool
    private var connections: Int32
    private var attempts: Int32
    /// -1 when the length is unknown.
    private var bytes: Int64
    private var bytesDownloaded: Int64
    private var resumedFrom: Int64
    private var durationS: Double
    private var rare: Rare?

    /// What few results have; shared, never changed.
    private final class Rare: Sendable {
        let sha256Actual: String?
        let sha512Actual: String?
        let error: ItemError?
        let note: String?
        /// Bytes received beyond those written (`ItemResult.bytesReceived`).
        let discarded: Int64
        /// The whole result, when its names, URL or tags are not the planned item's
        /// (kept whole rather than rebuilt wrongly).
        let whole: ItemResult?

        init(
            sha256Actual: String?, sha512Actual: String?, error: ItemError?, note: String?, discarded: Int64,
            whole: ItemResult?
        ) {
            self.sha256Actual = sha256Actual
            self.sha512Actual = sha512Actual
            self.error = error
            self.note = note
            self.discarded = discarded
            self.whole = whole
        }
    }

    /// The row for `result`, which describes `item`.
    init(_ result: ItemResult, of item: PlannedItem) {
        status = result.status
        connections = Int32(clamping: result.connections)
        attempts = Int32(clamping: result.attempts)
        bytes = result.bytes ?? -1
        bytesDownloaded = result.bytesDownloaded
        resumedFrom = result.resumedFrom
        durationS = result.durationS
        actualIsExpected = result.sha256Actual.map { item.expectedSHA256?.matches($0) ?? false } ?? false
        actual512IsExpected = result.sha512Actual != nil && result.sha512Actual == item.sha512
        let fromItem =
            result.dest == item.dest && result.url == item.displayURL && result.tag == item.tag && result.tags == item.tags
            && result.sha256Expected.map(PackedSHA256.init) == item.expectedSHA256 && result.sha512Expected == item.sha512
            && result.insecure == item.options.insecure
            && result.link == item.link
            && Int(connections) == result.connections && Int(attempts) == result.attempts && result.bytes != -1
        let actual = actualIsExpected ? nil : result.sha256Actual
        let actual512 = actual512IsExpected ? nil : result.sha512Actual
        let discarded = result.bytesReceived - result.bytesDownloaded
        if !fromItem || discarded < 0 {
            rare = Rare(sha256Actual: nil, sha512Actual: nil, error: nil, note: nil, discarded: 0, whole: result)
        } else if actual != nil || actual512 != nil || result.error != nil || result.note != nil || discarded > 0 {
            rare = Rare(
                sha256Actual: actual, sha512Actual: actual512, error: result.error, note: result.note,
                discarded: discarded, whole: nil)
        } else {
            rare = nil
        }
    }

    /// Whether the item changed the tree (`ItemResult.changesTree`), without building
    /// the result.
    var changesTree: Bool {
        if let whole = rare?.whole { return whole.changesTree }
        return ItemResult.changesTree(status: status, attempts: Int(attempts))
    }

    /// What totals and the exit code need, without building the result.
    var outcome: (status: ItemStatus, bytes: ItemResult.Fetched, error: ItemError?) {
        if let whole = rare?.whole { return (whole.status, whole.fetched, whole.error) }
        return (status, .init(downloaded: bytesDownloaded, received: bytesDownloaded + (rare?.discarded ?? 0)), rare?.error)
    }

    /// The full result again, with the names, URL and tags of `item`.
    func result(for item: PlannedItem) -> ItemResult {
        if let whole = rare?.whole { return whole }
        // Spelled out once for both fields.
        let expected = item.sha256
        return ItemResult(
            dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: status,
            bytes: bytes < 0 ? nil : bytes, bytesDownloaded: bytesDownloaded,
            bytesReceived: bytesDownloaded + (rare?.discarded ?? 0), resumedFrom: resumedFrom,
            connections: Int(connections), attempts: Int(attempts), durationS: durationS,
            sha256Expected: expected, sha256Actual: actualIsExpected ? expected : rare?.sha256Actual,
            sha512Expected: item.sha512, sha512Actual: actual512IsExpected ? item.sha512 : rare?.sha512Actual,
            error: rare?.error, insecure: item.options.insecure, note: rare?.note, link: item.link)
    }
}

extension ItemResult {
    /// Whether this result changed the tree: placed (`downloaded`; `unverified` after a
    /// request, which a file kept without one never made), or `deleted`.
    var changesTree: Bool { Self.changesTree(status: status, attempts: attempts) }

    static func changesTree(status: ItemStatus, attempts: Int) -> Bool {
        switch status {
        case .downloaded, .deleted: true
        case .unverified: attempts > 0
        case .unchanged, .verified, .failed, .mismatch, .interrupted, .skipped, .missing, .deleteSkipped, .keptRemoved,
            .notServed:
            false
        }
    }
}
