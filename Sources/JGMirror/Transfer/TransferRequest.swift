/// Everything the engine needs to fetch one file into its part file.
struct TransferRequest: Sendable {
    /// Caller's identifier, echoed in events and the outcome.
    var id: Int
    /// The primary URL, then its mirrors.
    var sources: [String]
    /// The folder `partPath` and `statePath` are below; every file operation goes through it.
    var root: RootDirectory
    /// Where bytes are written (`DEST.jgpart`).
    var partPath: String
    /// Where resume state lives (`DEST.jgd`).
    var statePath: String
    /// The length the manifest promises; any other length fails the item.
    var expectedSize: Int64?
    /// The item's resolved options, by reference (`ItemOptions`): connections, retries,
    /// `min_segment`, `timeout`, the headers (sent to the origins of `sources`, and after
    /// a redirect to other origins only with `forward_headers`), `insecure`, and
    /// `max_size`, the most bytes accepted when the length is unknown, or announced
    /// when it is known.
    var options: ItemOptions
    /// Use and keep resume state.
    var resume: Bool
    /// The caller just found no resume state and no part file: start anew without looking.
    var knownFresh = false
    /// Told how far the verified-ready prefix reaches.
    var observer: PartFileObserver?
    /// `If-None-Match` / `If-Modified-Since` lines for the first request: a `304` to it
    /// ends the item as `notModified` with nothing written.
    var conditions: [String] = []
    /// A fresh body of at most this many bytes is held in memory instead of written to
    /// the part file, and handed over in the outcome (`TransferOutcome.body`) for its
    /// placer to write once verified (`HeldBody`). Nil: every body goes to the part file
    /// (a checksums list is read back from it).
    var memoryLimit: Int64?
    /// The primary URL as its resume state names it (`resumeIdentity`): without
    /// credentials and without the values of the query parameters named in `redact`,
    /// so that no file a run leaves derives from a secret. Nil: `sources[0]` without
    /// its credentials.
    var stateURL: String?
}

extension TransferRequest {
    /// What the resume state's URL and its digest are taken from (`stateURL`).
    var resumeIdentity: String { stateURL ?? Redactor.redactURL(sources[0]) }

    /// How much the first request of a file whose length is not known asks for, when
    /// more connections may follow (docs/engine.md#politeness): two `min_segment`s, so
    /// a file of less is one request, and no more than that reaches the item before it
    /// has cut its regions.
    var firstBound: Int64 { 2 * options.minSegment }

    /// The primary source is a `file:` URL: no connection to open, no ranges.
    var isFileSource: Bool { sources.first?.hasPrefix(asciiCaseInsensitive: "file:") ?? false }

    /// Whether the part file waits for the first response, which tells whether the
    /// body is held in memory: a fresh item that may be small. The others open it
    /// ahead of their turn (`ItemPreparation`); a fresh one that turns out large
    /// opens it when its first response comes.
    var opensPartLazily: Bool {
        guard knownFresh, let memoryLimit else { return false }
        return (expectedSize ?? 0) <= memoryLimit
    }

    /// The manifest's size, when a fresh download may cut its regions from it before
    /// any response: worth two regions or more, unconditional (a conditional request
    /// most often ends in a `304`), over connections, at hosts `mayCutAhead` allows
    /// (`TransferEngine.mayCutAhead`: connections may open before the host answers,
    /// and it is not known to ignore ranges or redirect).
    func sizeToCutAhead(mayCutAhead: (String) -> Bool) -> Int64? {
        guard let expectedSize, expectedSize >= 2 * options.minSegment, options.connections > 1, conditions.isEmpty,
            !isFileSource,
            sources.allSatisfy(mayCutAhead)
        else { return nil }
        return expectedSize
    }

    /// Why a length the server announced cannot be this item's: not the manifest's
    /// `size`, or more than `max_size`.
    func refusal(ofLength length: Int64?) -> TransferError? {
        guard let length else { return nil }
        if let expectedSize, length != expectedSize {
            return .sizeMismatch("server announced \(length) bytes, the manifest says \(expectedSize)")
        }
        if let sizeLimit = options.maxSize, length > sizeLimit {
            return .tooLarge("server announced \(length) bytes, more than max_size (\(sizeLimit))")
        }
        return nil
    }
}

/// How one transfer ended.
struct TransferOutcome: Sendable {
    enum Status: Sendable {
        case completed
        case failed(TransferError)
        /// Stopped by a cancel; resume state kept unless cleared.
        case cancelled
        /// Never started (fail-fast or cancel before its turn).
        case skipped
        /// The remote answered `304` to the request's conditions; no body was fetched.
        case notModified
    }

    var status: Status
    /// The file's final length, once known.
    var length: Int64?
    /// Bytes written to the part file or held body in this run.
    var bytesDownloaded: Int64 = 0
    /// Body bytes libcurl delivered in this run, written or not: `bytesDownloaded`
    /// plus what the engine refused or discarded (docs/reports.md#json-report).
    var bytesReceived: Int64 = 0
    /// Bytes reused from an earlier run.
    var resumedFrom: Int64 = 0
    /// Most connections used at once.
    var connections: Int = 0
    /// Requests made for the item, retries included.
    var attempts: Int = 0
    /// Why resume state was discarded or the item restarted, when it was.
    var note: String?
    /// A `DEST.jgd` may exist and must be removed once the file is placed.
    var hasState = false
    /// The remote's ETag and Last-Modified, as last answered.
    var validators = Validators()
    /// The part file's data was synced after its last byte: placement need not sync it.
    var dataSynced = false
    /// Calls its argument, with the first sync that failed, once the item's queued syncs
    /// and checkpoints have run: whoever places the file goes on from there (a
    /// completed item only). It may call back on another thread.
    var afterSyncs: AfterSyncs = { $0(nil) }
    /// The whole file, when its body was held in memory (`TransferRequest.memoryLimit`):
    /// nothing of it is on disk, and `afterSyncs` has nothing to wait for.
    var body: [UInt8]?

    typealias AfterSyncs = @Sendable (_ then: @escaping @Sendable (TransferError?) -> Void) -> Void
}

/// What the engine reports while it works, on its own thread.
enum TransferEvent: Sendable {
    /// The first response arrived: the length (when known) and connections planned.
    case started(id: Int, length: Int64?, connections: Int, resumedFrom: Int64)
    /// Throttled progress: bytes this run, bytes on disk, and the total when known.
    case progress(id: Int, bytesThisRun: Int64, bytesPresent: Int64, length: Int64?, connections: Int)
}
