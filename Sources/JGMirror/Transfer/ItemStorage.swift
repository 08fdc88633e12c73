import Foundation

/// Where one item's bytes go (docs/sync.md#fetching-and-placing, docs/engine.md#resume-state): its
/// part file, the `BodyWriter` that fills it, the `ItemDurability` that syncs it, and the resume
/// state (`.jgd`) kept for the next run while the item is resumable; or, for a small fresh file, a
/// `HeldBody` in memory (`TransferRequest.memoryLimit`).
///
/// The engine thread's only, like the `ItemTransfer` that owns it: each of its fields
/// is `EngineBound`, checked on every access in debug builds, and so are the
/// `BodyWriter` and the `ItemDurability` reached through them. The part file is
/// opened before the item's turn by the engine's preparation queue, which hands it
/// over as a value (`ItemPreparation`, `adopt`). An item that opens its part file lazily
/// (`TransferRequest.opensPartLazily`) is not prepared: the first response's length
/// decides between a held body and a part file opened then, on the engine thread.
final class ItemStorage {
    private let request: TransferRequest
    @EngineBound private var durability: ItemDurability
    private let checkpointInterval: Double
    /// Writes the body buffers; counts the bytes of this run.
    @EngineBound private var writer: BodyWriter
    @EngineBound private var part: PartFile?
    /// The body, held in memory instead of `part`.
    @EngineBound private var held: HeldBody?
    /// Keeps resume state: ranges supported, and large enough to be worth it.
    @EngineBound private(set) var resumable: Bool
    /// Why the part file could not be opened; the item fails with it when it starts.
    @EngineBound private(set) var openFailure: TransferError?
    @EngineBound private var lastCheckpoint: Double
    /// What a reservation must leave free; `writer` holds its own for bodies of unknown length.
    private let spaceGuard: SpaceGuard

    /// The storage of `request`'s body, whose fields belong to `thread`.
    init(request: TransferRequest, configuration: TransferEngine.Configuration, thread: EngineThread) {
        self.request = request
        checkpointInterval = configuration.checkpointInterval
        spaceGuard = SpaceGuard(minFree: configuration.minFree, probe: configuration.freeSpace, ledger: configuration.spaceLedger)
        _durability = EngineBound(
            ItemDurability(statePath: request.statePath, root: request.root, configuration: configuration), on: thread)
        _writer = EngineBound(BodyWriter(request: request, spaceGuard: spaceGuard), on: thread)
        _part = EngineBound(nil, on: thread)
        _held = EngineBound(nil, on: thread)
        _resumable = EngineBound(false, on: thread)
        _openFailure = EngineBound(nil, on: thread)
        _lastCheckpoint = EngineBound(0, on: thread)
    }

    /// Whoever lets go of the item last, on whatever thread, ends its body: the free
    /// space the writer's guard held goes back to the others (`SpaceGuard.Ledger`,
    /// a lock), without the check.
    deinit { _writer.unchecked.ended() }

    /// Bytes written in this run.
    var bytesThisRun: Int64 { writer.bytesThisRun }
    /// Resume state is on disk, or a checkpoint of it is queued.
    var hasState: Bool { durability.checkpointed }

    /// Takes the part file the preparation opened (or why it could not), and with
    /// `earlierRun` the earlier run's resume state that goes with its bytes.
    func adopt(part opened: Result<PartFile, TransferError>, earlierRun: Bool) {
        if earlierRun {
            resumable = true
            durability.adoptExistingState()
        }
        switch opened {
        case .success(let file): part = file
        case .failure(let failure): openFailure = failure
        }
    }

    /// The length of the file is known now: resumable files, and any larger than
    /// 1 MiB, get their whole length reserved at once (a small single-request file is
    /// written in one go; reserving it costs more than it saves). An item that has
    /// no part file yet holds its body in memory when it may, or opens the part file now.
    func learned(length: Int64?, rangesSupported: Bool) -> TransferError? {
        resumable = rangesSupported && (length ?? 0) > request.options.minSegment && request.resume
        if part == nil {
            held = nil
            if let length, let limit = request.memoryLimit, length <= limit, !resumable, openFailure == nil {
                held = HeldBody(length: Int(length))
                return nil
            }
            // The one part file the engine thread creates itself: its cost is measured
            // in ARCHITECTURE.md.
            adopt(part: ItemPreparation.openPart(request, fresh: true), earlierRun: false)
            if let openFailure { return openFailure }
        }
        if let length, let part, resumable || length > 1 << 20 {
            // A file that cannot have its space keeps no part file or state behind:
            // the next run asks again, on what the disk has then.
            if let refusal = spaceGuard.admitReservation(of: length, fd: part.fd, path: part.path) {
                resumable = false
                return refusal
            }
            do { try part.reserve(length) } catch {
                resumable = false
                return error
            }
        }
        return nil
    }

    /// Writes a body buffer for `worker` (`BodyWriter.write`).
    func write(_ bytes: UnsafeRawBufferPointer, for worker: Worker, book: inout SegmentBook?) -> (
        written: Int, failure: TransferError?
    ) {
        writer.write(bytes, for: worker, book: &book, part: part, held: held, durability: durability)
    }

    /// Saves resume state when a checkpoint is due.
    func checkpointIfDue(now: Double, book: SegmentBook?, validators: Validators) {
        guard resumable, now - lastCheckpoint >= checkpointInterval else { return }
        lastCheckpoint = now
        checkpoint(book, validators: validators, final: false)
    }

    /// Counts checkpoint intervals from `now` (the item's start).
    func startClock(now: Double) { lastCheckpoint = now }

    private func checkpoint(_ book: SegmentBook?, validators: Validators, final: Bool) {
        guard resumable, let book, let part else { return }
        let state = ResumeState(url: request.resumeIdentity, validators: validators, length: book.length, missing: book.missing)
        durability.checkpoint(state, part: part, final: final)
    }

    /// The download starts over from zero: the resume state goes and the part file is emptied.
    func startOver() throws(TransferError) {
        writer.restarted()
        resumable = false
        durability.dropState()
        held = nil
        try part?.truncate()
    }

    /// The last byte is written: hands the part file to `ItemDurability.finish`, or
    /// returns the flush that failed on the way.
    func finish() -> Result<(synced: Bool, afterSyncs: TransferOutcome.AfterSyncs)?, TransferError> {
        writer.ended()
        if let failure = part?.failedSync { return .failure(failure) }
        defer { part = nil }
        return .success(part.map { durability.finish($0) })
    }

    /// The body held in memory, handed over once the item is complete; nil when it
    /// went to the part file.
    func takeHeldBody() -> [UInt8]? {
        defer { held = nil }
        return held?.bytes
    }

    /// Ends the item early: queues the last checkpoint when state is kept (and there
    /// is any), otherwise the removal of the part file and its state. A part file
    /// another process holds (`locked`) is that process's. Returns the item's queue
    /// when it holds work: the item's outcome is reported once it is done.
    func close(keepingState: Bool, book: SegmentBook?, validators: Validators) -> DispatchQueue? {
        writer.ended()
        if keepingState && resumable {
            checkpoint(book, validators: validators, final: true)
        } else {
            resumable = false
            // A lazily opened part file (`learned`) may never have been made.
            let removesPart = (part != nil || openFailure != nil) && openFailure?.code != .locked
            durability.dropState(removingPart: removesPart ? request.partPath : nil)
        }
        part = nil
        held = nil
        return durability.queued
    }

    /// The item never started: a part file opened ahead of its turn goes, unless it
    /// holds an earlier run's bytes with their resume state.
    func abandon() {
        if part != nil, !resumable { request.root.unlink(request.partPath) }
        part = nil
    }
}
