import Foundation
import Synchronization

/// What makes one item's bytes durable: syncing the part file while data arrives
/// (durable runs) and writing resume state only after the data it claims is synced
/// (docs/engine.md#resume-state), both off the event loop on the item's own serial queue.
///
/// Serial, so a flush that met a write error has recorded it (in `PartFile`) before
/// the next checkpoint asks; one queue per item, so finishing an item waits for its
/// own syncs, not for other items'. Called from the engine thread only.
final class ItemDurability {
    private let statePath: String
    private let root: RootDirectory
    private let durable: Bool
    private let dataSync: @Sendable (Int32) -> Int32
    private let flushStep: Int64
    private let writebackStep: Int64
    private let startWriteback: @Sendable (Int32) -> Int32
    /// Made when the first work is queued (`itemQueue`); nil: nothing was.
    private var queue: DispatchQueue?
    private let checkpointBusy = Locked(false)
    private let flushBusy = Locked(false)
    private let writebackBusy = Locked(false)
    /// Bytes written since the last flush was queued (durable runs).
    private var unflushed: Int64 = 0
    /// Bytes written since writeback was last started or a flush queued (durable runs).
    private var unwritten: Int64 = 0
    /// Writeback was started or a flush queued: the item is not a small file, which
    /// placement's batch sync takes care of.
    private var wroteBack = false
    /// Resume state exists on disk or a checkpoint was queued: dropping or completing
    /// must wait for the queue.
    private(set) var checkpointed = false

    init(statePath: String, root: RootDirectory, configuration: TransferEngine.Configuration) {
        self.statePath = statePath
        self.root = root
        durable = configuration.durable
        dataSync = configuration.dataSync
        flushStep = configuration.flushStep
        writebackStep = configuration.writebackStep
        startWriteback = configuration.startWriteback
    }

    /// Resume state from an earlier run is on disk.
    func adoptExistingState() { checkpointed = true }

    /// Counts written bytes; in a durable run, starts writeback every `writebackStep`
    /// and queues a flush every `flushStep`. Returns the failure of an earlier flush,
    /// which fails the item.
    func wrote(_ count: Int, to part: PartFile) -> TransferError? {
        guard durable else { return nil }
        unflushed += Int64(count)
        unwritten += Int64(count)
        guard unflushed >= flushStep else {
            if unwritten >= writebackStep { writeBack(part) }
            return nil
        }
        if let failure = part.failedSync { return failure }
        let sync = dataSync
        guard enqueue({ try? part.syncData(using: sync) }, unlessBusy: flushBusy)
        else { return nil }
        unflushed = 0
        unwritten = 0
        wroteBack = true
        return nil
    }

    /// Starts writeback of what `part` holds so far, without waiting for it (durable
    /// runs), unless an earlier start is still queued.
    func writeBack(_ part: PartFile) {
        guard durable else { return }
        let start = startWriteback
        guard enqueue({ part.startWriteback(using: start) }, unlessBusy: writebackBusy) else { return }
        unwritten = 0
        wroteBack = true
    }

    /// Ends the download. In a durable run that started writeback (not a small file,
    /// which placement's batch sync takes care of), syncs the last bytes on the queue
    /// while the hasher reads what lies past the contiguous prefix, so that placement
    /// need not sync the file again. Returns whether it does, and `afterSyncs`: it
    /// calls its argument with the first sync that failed once everything queued has
    /// run (so no checkpoint lands after the file is renamed), at once when nothing
    /// was queued, else on the item's queue; nobody waits, and it holds neither the
    /// file nor its descriptor.
    func finish(_ part: PartFile) -> (synced: Bool, afterSyncs: TransferOutcome.AfterSyncs) {
        let synced = durable && wroteBack
        if synced {
            let sync = dataSync
            itemQueue.async { try? part.syncData(using: sync) }
        }
        let queue = queue
        let failure = part.syncFailure
        return (
            synced,
            { then in
                guard let queue else { return then(failure.value) }
                queue.async { then(failure.value) }
            }
        )
    }

    /// Saves resume state: the part file's data is synced first, so the record never
    /// claims bytes a power cut could lose (under `--no-fsync` the record says so, and
    /// is not trusted after a reboot). A checkpoint whose sync fails writes no state;
    /// the failure itself fails the item when it completes. A `final` one (the item
    /// ends) is queued even while another is pending; whoever reports the end waits
    /// for the queue (`queued`).
    func checkpoint(_ state: ResumeState, part: PartFile, final: Bool) {
        var state = state
        let durable = durable
        if !durable { state.unsyncedBoot = ResumeState.bootID ?? "unknown" }
        let path = statePath
        let root = root
        let sync = dataSync
        let save: @Sendable () -> Void = { [state] in
            if durable {
                do { try part.syncData(using: sync) } catch { return }
            }
            try? state.write(to: path, durable: durable, root: root)
        }
        if final {
            checkpointed = true
            itemQueue.async(execute: save)
            return
        }
        if enqueue(save, unlessBusy: checkpointBusy) { checkpointed = true }
    }

    /// Removes resume state, durably, before the part file is reused for other bytes.
    /// Waits for the queue: the engine thread writes the new bytes next. The one wait
    /// left, on a start over (the file changed on the server).
    func dropState() {
        guard checkpointed else { return }
        checkpointed = false
        let path = statePath
        let root = root
        let durable = durable
        itemQueue.sync {
            if root.unlink(path), durable { root.syncFolder(Paths.parent(of: path)) }
        }
    }

    /// Removes resume state, then the part file at `partPath` when given, on the queue:
    /// the item ends (`ItemStorage.close`), so no write comes after. Whoever reports
    /// the end waits for the queue (`queued`), not the engine thread.
    func dropState(removingPart partPath: String?) {
        let dropsState = checkpointed
        checkpointed = false
        guard dropsState || partPath != nil else { return }
        let path = statePath
        let root = root
        let durable = durable
        itemQueue.async {
            if dropsState, root.unlink(path), durable { root.syncFolder(Paths.parent(of: path)) }
            if let partPath { root.unlink(partPath) }
        }
    }

    /// The item's queue, if anything was queued on it: what an ended item's outcome
    /// waits for.
    var queued: DispatchQueue? { queue }

    /// The item's serial queue, made on first use.
    private var itemQueue: DispatchQueue {
        if let queue { return queue }
        let made = DispatchQueue(label: "jgmirror.item-sync")
        queue = made
        return made
    }

    /// Runs `work` on the queue unless the last one queued under `busy` is still
    /// pending (one checkpoint, one flush at a time); says whether it was queued.
    private func enqueue(_ work: @escaping @Sendable () -> Void, unlessBusy busy: Locked<Bool>) -> Bool {
        guard
            busy.withLock({ value in
                defer { value = true }
                return !value
            })
        else { return false }
        itemQueue.async {
            work()
            busy.withLock { $0 = false }
        }
        return true
    }
}
