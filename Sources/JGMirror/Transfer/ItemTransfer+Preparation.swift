/// An item's preparation (`TransferEngine.preparation`): its part file opened and an
/// earlier run's files taken over before its turn, off the engine thread.
extension ItemTransfer {
    /// Whether `prepare()` has anything to do before the item's turn: not for an item
    /// whose part file waits for its first response (`TransferRequest.opensPartLazily`).
    var needsPreparation: Bool { !request.opensPartLazily }

    /// Opens the part file and adopts valid resume state (preparation queue, before
    /// the item's turn); `EarlierRun` removes what cannot be trusted.
    func prepare() {
        if !request.knownFresh {
            // No response has shown a round trip yet: the regions are not capped (`Crew.makeBook`).
            let earlier = EarlierRun.takeOver(request) {
                SegmentBook(length: $0, missing: $1, connections: request.connections, minSegment: request.minSegment)
            }
            tally.note = earlier.note
            if let saved = earlier.book {
                earlierBook = saved
                remote.adopt(earlier.validators)
                storage.adoptEarlierRun()
                tally.resumedFrom = earlier.resumedFrom
            }
        }
        storage.open()
        if let earlierBook, storage.openFailure == nil, tally.resumedFrom > 0 {
            request.observer?.prefixCompleted(upTo: earlierBook.contiguousPrefix)
        }
    }

    /// Gives the crew the earlier run's book `prepare()` adopted (engine thread, when
    /// the prepared item is back, before anything else looks at it).
    func adoptPrepared() {
        guard let saved = earlierBook else { return }
        earlierBook = nil
        crew.book = saved
        crew.rangesSupported = true
    }
}
