/// An item's preparation (`TransferEngine.preparation`): its part file opened and an
/// earlier run's files taken over before its turn, off the engine thread
/// (`ItemPreparation`), then adopted on it.
extension ItemTransfer {
    /// Whether the item has anything to prepare before its turn: not one whose part file
    /// waits for its first response (`TransferRequest.opensPartLazily`).
    var needsPreparation: Bool { !request.opensPartLazily }

    /// Takes what the preparation found (engine thread, when the prepared item is
    /// back, before anything else looks at it): the earlier run's ranges, validators
    /// and progress, and the part file.
    func adopt(_ preparation: ItemPreparation) {
        let earlier = preparation.earlier
        tally.note = earlier.note
        if let book = earlier.book {
            remote.adopt(earlier.validators)
            tally.resumedFrom = earlier.resumedFrom
            crew.book = book
            crew.rangesSupported = true
        }
        storage.adopt(part: preparation.part, earlierRun: earlier.book != nil)
    }
}
