import CLinux
import Foundation

/// A fetched item's end: verified against its checksum, placed, recorded.
extension ItemRunner {
    func finish(
        _ index: Int, _ outcome: TransferOutcome, hasher: PrefixHasher, started: Date, note: String?, present: ItemAssessment?,
        earlierBytes: Int64
    ) {
        submitNext()
        let item = items[index]
        var result = result(item, status: .downloaded)
        result.bytes = outcome.length
        // Every byte received this run counts, a discarded pass's too
        // (docs/reports.md#json-report).
        result.bytesDownloaded = outcome.bytesDownloaded + earlierBytes
        result.resumedFrom = outcome.resumedFrom
        result.connections = outcome.connections
        result.attempts = outcome.attempts
        result.note = (outcome.note ?? note).map { item.redactor.redact($0) }
        let elapsed: @Sendable () -> Double = { Date().timeIntervalSince(started) }
        switch outcome.status {
        case .failed(let error):
            result.status = .failed
            result.error = ItemError(code: error.code, message: item.redactor.redact(error.message))
            result.durationS = elapsed()
            record(index, result)
        case .cancelled:
            result.status = .interrupted
            result.error =
                options.runDeadline.reached
                ? ItemError(code: .deadline, message: "stopped at the run's deadline (--max-duration); resume state kept")
                : ItemError(code: .interrupted, message: "stopped by a signal or cancel; resume state kept")
            result.durationS = elapsed()
            record(index, result)
        case .skipped:
            result.status = .skipped
            record(index, result)
        case .notModified:
            let old = stateRecord(of: item)
            result.status = .unchanged
            result.bytes = present?.size
            result.note = "not modified"
            result.sha256Actual = present?.sha256
            result.durationS = elapsed()
            learn(
                item, stat: present?.stat, sha256: present?.sha256, validators: outcome.validators,
                verifiedAt: present?.hashedAt ?? (present?.recordHolds == true ? old?.verifiedAt : nil))
            record(index, result)
        case .completed:
            let base = result
            if let body = outcome.body {
                // Held in memory, never written: hashed here, written by placement once verified.
                let digest = SHA256.hex(of: body).map { Result<String, VerifyError>.success($0) } ?? .failure(.noHasher)
                verify(index, base, digest, outcome, elapsed: elapsed)
                return
            }
            hasher.finish(length: outcome.length ?? 0) { digest in
                // The part file's last sync runs beside the hasher: go on once it has (on
                // its queue, never holding up the thread that called). Bytes it could not
                // make durable are not placed, and no resume state claims them.
                outcome.afterSyncs { failure in
                    guard let failure else {
                        self.verify(index, base, digest, outcome, elapsed: elapsed)
                        return
                    }
                    var result = base
                    self.root.unlink(item.partPath)
                    self.root.unlink(item.statePath)
                    result.status = .failed
                    result.error = ItemError(code: failure.code, message: item.redactor.redact(failure.message))
                    result.durationS = elapsed()
                    self.record(index, result)
                }
            }
        }
    }

    /// Checks a completed download's digests against the manifest, then places it or
    /// keeps its bytes aside.
    func verify(
        _ index: Int, _ base: ItemResult, _ digest: Result<String, VerifyError>, _ outcome: TransferOutcome,
        elapsed: @escaping @Sendable () -> Double
    ) {
        let item = items[index]
        var result = base
        switch digest {
        case .failure(let error):
            if outcome.body == nil { root.unlink(item.partPath) }  // a held body made none
            result.status = .failed
            result.error = ItemError(code: .ioError, message: error.localizedDescription)
            result.durationS = elapsed()
            record(index, result)
        case .success(let actual):
            result.sha256Actual = actual
            if let expected = item.sha256, expected != actual, outcome.resumedFrom > 0,
                refetched.withLock({ $0.insert(index).inserted })
            {
                // Resumed bytes can come from another version of the file when the
                // server's validators (size and mtime) could not tell them apart:
                // fetch it once more from zero before calling it a mismatch.
                root.unlink(item.partPath)
                root.unlink(item.statePath)
                state.withLock { $0.submitted += 1 }
                fetch(
                    index, knownFresh: true,
                    note: "checksum failed after resuming (a change the validators could not show); fetched again from zero",
                    earlierBytes: base.bytesDownloaded)
                return
            }
            // Lists can give an item both digests (SHA256SUMS and SHA512SUMS): each must hold.
            if let expected = item.sha256, expected != actual {
                reportMismatch(index, result, "SHA-256 is \(actual), expected \(expected)", outcome, elapsed: elapsed)
                return
            }
            if let expected = item.sha512 {
                // A second pass over the part file (or the body held in memory), beside
                // the transfers: the streaming hasher computes SHA-256 only.
                let checked = result
                hashing.submitWithoutWaiting {
                    var result = checked
                    let digest =
                        outcome.body.map { SHA256.hex(of: $0, algorithm: .sha512) }
                        ?? (try? self.root.openFile(item.partPath, flags: O_RDONLY)).flatMap { fd in
                            defer { close(fd) }
                            return try? FileHasher.hex(fd: fd, path: item.partPath, algorithm: .sha512)
                        }
                    result.sha512Actual = digest
                    guard let digest, digest == expected else {
                        let difference = "SHA-512 is \(digest ?? "unreadable"), expected \(expected)"
                        self.reportMismatch(index, result, difference, outcome, elapsed: elapsed)
                        return
                    }
                    self.place(index, result, outcome, elapsed: elapsed)
                }
                return
            }
            place(index, result, outcome, elapsed: elapsed)
        }
    }

    /// Keeps a download whose digest is not the manifest's aside (`Placement.quarantine`)
    /// and reports it as a mismatch: `difference`, then where the bytes are.
    func reportMismatch(
        _ index: Int, _ checked: ItemResult, _ difference: String, _ outcome: TransferOutcome,
        elapsed: @escaping @Sendable () -> Double
    ) {
        let item = items[index]
        let kept = Placement.quarantine(
            part: item.partPath, destination: item.path, state: item.statePath, root: root, contents: outcome.body,
            in: quarantine, as: item.dest)
        var result = checked
        result.status = .mismatch
        result.error = ItemError(code: .checksumMismatch, message: "\(difference); \(kept)")
        result.durationS = elapsed()
        record(index, result)
    }

    /// Renames verified bytes onto the destination and records the item.
    /// Places the verified part file and records it (its SHA-256 and the remote's
    /// validators) in the state database with the batch.
    func place(
        _ index: Int, _ verified: ItemResult, _ outcome: TransferOutcome, elapsed: @escaping @Sendable () -> Double
    ) {
        let item = items[index]
        let state = outcome.hasState ? item.statePath : nil
        // Validators that prove nothing are not kept: the next run fetches the file again.
        let validators = outcome.validators.lasting
        let placed = FileRecord(
            dest: item.dest, stat: FileStat(size: 0, mtimeNs: 0, ctimeNs: 0, inode: 0, device: 0), sha256: verified.sha256Actual,
            sha512: verified.sha512Actual, etag: validators.etag, lastModified: validators.lastModified, url: item.displayURL,
            verifiedAt: nil, checkedAt: 0)
        var commit = Placement.Commit(
            part: item.partPath, destination: item.path, state: state, record: placed, synced: outcome.dataSynced,
            contents: outcome.body
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
