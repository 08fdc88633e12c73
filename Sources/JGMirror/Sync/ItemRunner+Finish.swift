import CLinux
import Foundation

/// A fetched item's end, in named stages (docs/sync.md#fetching-and-placing), each run
/// where it belongs and handing the next what it found:
///
/// 1. `finish`: the engine's outcome (on the `finishing` lane); a download goes on;
/// 2. `hash`: the part file's SHA-256 — the prefix hasher's read-back of what it has not
///    hashed yet is a computing job of the run's pool (a body held in memory is hashed
///    here);
/// 3. `awaitSyncs`: the part file's last syncs, on the item's own queue;
/// 4. `verify`: the digests against the manifest (a SHA-512's second pass a computing
///    job);
/// 5. `place`: renamed onto its destination with a batch (`Placement`'s lane), or held
///    for its group's phase (`GroupPublisher`);
/// 6. `record`: the result, and what the state database learns.
extension ItemRunner {
    /// What each stage of a download's end hands the next.
    struct Finishing: Sendable {
        let index: Int
        let outcome: TransferOutcome
        /// The result so far: what the transfer said, then what each stage adds.
        var result: ItemResult
        /// Seconds since the item started.
        let elapsed: @Sendable () -> Double
    }

    /// Stage 1: the engine's outcome for item `index`. A download goes on to `hash`;
    /// anything else is recorded.
    func finish(
        _ index: Int, _ outcome: TransferOutcome, hasher: PrefixHasher, started: Date, note: String?, present: ItemAssessment?,
        earlier: ItemResult?
    ) {
        submitNext()
        let item = items[index]
        var result = result(item, status: .downloaded)
        result.bytes = outcome.length
        // Every byte received this run counts, a discarded pass's too
        // (docs/reports.md#json-report).
        result.bytesDownloaded = outcome.bytesDownloaded + (earlier?.bytesDownloaded ?? 0)
        result.bytesReceived = outcome.bytesReceived + (earlier?.bytesReceived ?? 0)
        result.resumedFrom = outcome.resumedFrom
        result.connections = outcome.connections
        result.attempts = outcome.attempts
        result.note = (outcome.note ?? note).map { item.redactor.redact($0) }
        let elapsed: @Sendable () -> Double = { Date().timeIntervalSince(started) }
        switch outcome.status {
        case .failed(let error):
            result.status = .failed
            result.error = ItemError(code: error.code, message: item.redactor.redact(error.message))
        case .cancelled:
            result.status = .interrupted
            result.error =
                options.runDeadline.reached
                ? ItemError(code: .deadline, message: "stopped at the run's deadline (--max-duration); resume state kept")
                : ItemError(code: .interrupted, message: "stopped by a signal or cancel; resume state kept")
        case .skipped:
            result.status = .skipped
            return record(index, result)
        case .notModified:
            return keepUnmodified(index, result, present: present, validators: outcome.validators, elapsed: elapsed)
        case .completed:
            return hash(Finishing(index: index, outcome: outcome, result: result, elapsed: elapsed), hasher: hasher)
        }
        result.durationS = elapsed()
        record(index, result)
    }

    /// A `304` to a present file's conditional request: the file stays, as it is.
    private func keepUnmodified(
        _ index: Int, _ base: ItemResult, present: ItemAssessment?, validators: Validators, elapsed: () -> Double
    ) {
        let item = items[index]
        let old = stateRecord(of: item)
        var result = base
        result.status = .unchanged
        result.bytes = present?.size
        result.note = "not modified"
        result.sha256Actual = present?.sha256
        result.durationS = elapsed()
        learn(
            item, stat: present?.stat, sha256: present?.sha256, validators: validators,
            verifiedAt: present?.hashedAt ?? (present?.recordHolds == true ? old?.verifiedAt : nil))
        record(index, result)
    }

    /// Stage 2: the download's SHA-256. A body held in memory is hashed here; a part
    /// file's is the prefix hasher's, once it has read back what it had not hashed.
    func hash(_ finishing: Finishing, hasher: PrefixHasher) {
        if let body = finishing.outcome.body {
            // Held in memory, never written: hashed here, written by placement once verified.
            let digest = SHA256.hex(of: body).map { Result<String, VerifyError>.success($0) } ?? .failure(.noHasher)
            return verify(finishing, digest: digest)
        }
        hasher.finish(length: finishing.outcome.length ?? 0) { digest in self.awaitSyncs(finishing, digest: digest) }
    }

    /// Stage 3: the part file's last syncs, which ran beside the hasher, on the item's
    /// queue (never holding up the thread that calls). Bytes it could not make durable
    /// are not placed, and no resume state claims them.
    func awaitSyncs(_ finishing: Finishing, digest: Result<String, VerifyError>) {
        finishing.outcome.afterSyncs { failure in
            guard let failure else { return self.verify(finishing, digest: digest) }
            let item = self.items[finishing.index]
            self.root.unlink(item.partPath)
            self.root.unlink(item.statePath)
            var result = finishing.result
            result.status = .failed
            result.error = ItemError(code: failure.code, message: item.redactor.redact(failure.message))
            result.durationS = finishing.elapsed()
            self.record(finishing.index, result)
        }
    }

    /// Stage 4: the digests against the manifest's; then `place`, or the bytes kept
    /// aside as a mismatch.
    func verify(_ finishing: Finishing, digest: Result<String, VerifyError>) {
        let (index, outcome) = (finishing.index, finishing.outcome)
        let item = items[index]
        var finishing = finishing
        switch digest {
        case .failure(let error):
            if outcome.body == nil { root.unlink(item.partPath) }  // a held body made none
            finishing.result.status = .failed
            finishing.result.error = ItemError(code: .ioError, message: error.localizedDescription)
            finishing.result.durationS = finishing.elapsed()
            record(index, finishing.result)
        case .success(let actual):
            finishing.result.sha256Actual = actual
            if let expected = item.sha256, expected != actual {
                if refetchAfterResuming(finishing) { return }
                return reportMismatch(finishing, "SHA-256 is \(actual), expected \(expected)")
            }
            // Lists can give an item both digests (SHA256SUMS and SHA512SUMS): each must hold.
            guard item.sha512 != nil else { return place(finishing) }
            // A second pass over the part file (or the body held in memory), beside the
            // transfers: the streaming hasher computes SHA-256 only.
            let checked = finishing
            hashing.submitWithoutWaiting { self.verifySHA512(checked) }
        }
    }

    /// Resumed bytes can come from another version of the file when the server's
    /// validators (size and mtime) could not tell them apart: a resumed item whose
    /// SHA-256 fails is fetched once more from zero before it is called a mismatch.
    /// Returns whether it is.
    private func refetchAfterResuming(_ finishing: Finishing) -> Bool {
        let index = finishing.index
        guard finishing.outcome.resumedFrom > 0, refetched.withLock({ $0.insert(index).inserted }) else { return false }
        let item = items[index]
        root.unlink(item.partPath)
        root.unlink(item.statePath)
        state.withLock { $0.submitted += 1 }
        fetch(
            index, knownFresh: true,
            note: "checksum failed after resuming (a change the validators could not show); fetched again from zero",
            earlier: finishing.result)
        return true
    }

    /// Stage 4, the second digest: SHA-512 over the part file or the held body (a
    /// computing job of the run's pool); then `place`, or a mismatch.
    private func verifySHA512(_ finishing: Finishing) {
        let item = items[finishing.index]
        let digest =
            finishing.outcome.body.map { SHA256.hex(of: $0, algorithm: .sha512) }
            ?? (try? root.openFile(item.partPath, flags: O_RDONLY)).flatMap { fd in
                defer { close(fd) }
                return try? FileHasher.hex(fd: fd, path: item.partPath, algorithm: .sha512)
            }
        var finishing = finishing
        finishing.result.sha512Actual = digest
        guard let digest, digest == item.sha512 else {
            return reportMismatch(finishing, "SHA-512 is \(digest ?? "unreadable"), expected \(item.sha512 ?? "")")
        }
        place(finishing)
    }

    /// Keeps a download whose digest is not the manifest's aside (`Placement.quarantine`)
    /// and records it as a mismatch: `difference`, then where the bytes are.
    func reportMismatch(_ finishing: Finishing, _ difference: String) {
        let item = items[finishing.index]
        let kept = Placement.quarantine(
            part: item.partPath, destination: item.path, state: item.statePath, root: root,
            contents: finishing.outcome.body, in: quarantine, as: item.dest)
        var result = finishing.result
        result.status = .mismatch
        result.error = ItemError(code: .checksumMismatch, message: "\(difference); \(kept)")
        result.durationS = finishing.elapsed()
        record(finishing.index, result)
    }

    /// Stage 5: renames the verified part file onto its destination with a batch and
    /// records the item, its SHA-256 and the remote's validators going to the state
    /// database with the batch (stage 6). An item of a group's later phase waits for
    /// its phase instead (`held`).
    func place(_ finishing: Finishing) {
        let (index, outcome, elapsed) = (finishing.index, finishing.outcome, finishing.elapsed)
        let item = items[index]
        let verified = finishing.result
        // Validators taken within their own resolution of a change prove nothing: kept
        // only when they do (docs/state.md#racy-validators).
        let validators = outcome.validators.lasting
        let placed = FileRecord(
            dest: item.dest, stat: FileStat(size: 0, mtimeNs: 0, ctimeNs: 0, inode: 0, device: 0), sha256: verified.sha256Actual,
            sha512: verified.sha512Actual, etag: validators.etag, lastModified: validators.lastModified, url: item.displayURL,
            verifiedAt: nil, checkedAt: 0)
        var commit = Placement.Commit(
            part: item.partPath, destination: item.path, state: outcome.hasState ? item.statePath : nil, record: placed,
            synced: outcome.dataSynced, contents: outcome.body
        ) { error in
            var result = verified
            if let error {
                result.status = .failed
                result.error = ItemError(code: error.code, message: error.message)
            } else {
                result.status = item.hasChecksum ? .downloaded : .unverified
            }
            result.durationS = elapsed()
            self.record(index, result)
        }
        if gated.contains(index) {
            // Its phase is placed once the ones before it are (`GroupPublisher`).
            var waiting = verified
            waiting.status = item.hasChecksum ? .downloaded : .unverified
            commit.done = { _ in }
            held.withLock { $0[index] = HeldPlacement(commit: commit, result: waiting, elapsed: elapsed) }
            record(index, waiting, announced: false)
            return
        }
        placement.commit(commit)
    }
}

/// The bytes of an item of a group's later phase (an apt suite's index), verified and
/// waiting for `GroupPublisher` to place them with their phase, or drop them.
struct HeldPlacement: Sendable {
    var commit: Placement.Commit
    /// The item's result once placed.
    var result: ItemResult
    /// Seconds since the item started, when asked.
    var elapsed: @Sendable () -> Double
}

extension ItemRunner {
    /// The items of `groups` whose placement waits for an earlier phase, by index.
    static func gatedItems(_ items: [PlannedItem], groups: [PublishGroup]) -> Set<Int> {
        let dests = Set(groups.flatMap(\.gatedItems))
        guard !dests.isEmpty else { return [] }
        return Set(items.indices.filter { dests.contains(items[$0].dest) })
    }

    /// The items of `groups` the server may lack, by index.
    static func optionalItems(_ items: [PlannedItem], groups: [PublishGroup]) -> Set<Int> {
        let dests = Set(groups.flatMap(\.optionalItems))
        guard !dests.isEmpty else { return [] }
        return Set(items.indices.filter { dests.contains(items[$0].dest) })
    }

    /// `result` of an optional item: `not_served` when the server said it has no such
    /// file (404, 410), as it is.
    static func notServed(_ result: ItemResult) -> ItemResult {
        guard result.status == .failed, let code = result.error?.code, code == .http(404) || code == .http(410) else {
            return result
        }
        var served = result
        served.status = .notServed
        served.note = "the server does not have it (\(code.rawValue)); it is optional, so nothing is placed and nothing fails"
        served.error = nil
        return served
    }

    /// Places the waiting bytes of item `index` (`GroupPublisher`), waiting for the
    /// placement, and returns the item's final result.
    func release(_ index: Int) -> ItemResult {
        guard let held = held.withLock({ $0.removeValue(forKey: index) }) else {
            return result(items[index], status: .failed)
        }
        let placed = DispatchSemaphore(value: 0)
        let outcome = Locked<TransferError?>(nil)
        var commit = held.commit
        commit.done = { error in
            outcome.withLock { $0 = error }
            placed.signal()
        }
        placement.commit(commit)
        placed.wait()
        var result = held.result
        if let error = outcome.value {
            result.status = .failed
            result.error = ItemError(code: error.code, message: error.message)
        }
        result.durationS = held.elapsed()
        events.yield(.itemFinished(result))
        return result
    }

    /// Drops the waiting bytes of item `index`: the previous copy stays, as `note`
    /// says; returns the item's final result.
    func drop(_ index: Int, note: String) -> ItemResult {
        let item = items[index]
        let held = held.withLock { $0.removeValue(forKey: index) }
        if held?.commit.contents == nil { root.unlink(item.partPath) }
        root.unlink(item.statePath)
        var result = held?.result ?? result(item, status: .skipped)
        result.status = .skipped
        result.note = note
        result.durationS = held?.elapsed() ?? 0
        events.yield(.itemFinished(result))
        return result
    }
}
