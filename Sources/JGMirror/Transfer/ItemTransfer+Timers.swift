/// The item's timers (`TransferEngine` calls them on every pass of its loop): retries
/// whose delay ran out, workers waiting for a host slot, stalled or lagging
/// connections replaced, slow sources left, checkpoints and progress events.
extension ItemTransfer {
    /// Retries whose delay ran out, workers waiting for a host slot, checkpoints, progress.
    func tick(now: Double) {
        guard !finished else { return }
        for worker in crew.doneWaiting(now: now) {
            requests.relaunch(worker)
            if finished { return }
        }
        if let (worker, stalled) = crew.replace(
            progress: storage.bytesThisRun, canConnect: { engine.hasRoom(Origin.key(remote.url(of: $0))) })
        {
            if stalled { tally.attempts += 1 }
            requests.launch(worker)
        }
        if finished { return }
        judgePace(now: now)
        if finished { return }
        storage.checkpointIfDue(now: now, book: book, validators: remote.validators)
        if events.due(now: now) {
            let present = book?.present ?? workers.first?.pos ?? 0
            engine.emit(
                events.report(
                    bytesThisRun: storage.bytesThisRun, bytesPresent: present, length: total, connections: crew.activeCount))
        }
    }

    /// Leaves each source that delivered under `min_rate` over the item's `timeout`,
    /// however many requests it was given (`SourcePace`).
    private func judgePace(now: Double) {
        var flowing = Set<Int>()
        for worker in workers where worker.easy != nil && worker.firstByteAt != nil && !worker.ratePaused {
            flowing.insert(worker.sourceIndex)
        }
        let configuration = engine.configuration
        for verdict in pace.look(now: now, flowing: flowing, floor: { configuration.rateFloor(for: remote.url(of: $0)) }) {
            requests.leave(slow: verdict)
            if finished { return }
        }
    }

    /// The soonest moment `tick` has something to do.
    func nextDeadline(now: Double) -> Double {
        crew.nextLook(now: now, before: now + engine.configuration.progressInterval)
    }
}
