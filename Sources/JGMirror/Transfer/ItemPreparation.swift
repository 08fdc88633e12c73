/// What an item's preparation found before its turn (`TransferEngine.preparation`): an
/// earlier run's files taken over (`EarlierRun`), and the part file opened, or why it
/// could not be. Made off the engine thread from the item's request alone, which is
/// immutable; the item adopts it on the engine thread (`ItemTransfer.adopt`), so none
/// of the item's own state is touched anywhere else.
struct ItemPreparation: Sendable {
    /// What the item takes over from an earlier run.
    var earlier: EarlierRun
    /// The part file, open and locked (`PartFile`), or why it is not.
    var part: Result<PartFile, TransferError>

    init(earlier: EarlierRun, part: Result<PartFile, TransferError>) {
        self.earlier = earlier
        self.part = part
    }

    /// Takes over an earlier run's files unless the item is known to be fresh, then
    /// opens the part file: new, unless an earlier run's bytes were taken over.
    init(_ request: TransferRequest) {
        // No response has shown a round trip yet: the regions are not capped (`Crew.makeBook`).
        earlier =
            request.knownFresh
            ? EarlierRun()
            : EarlierRun.takeOver(request) {
                SegmentBook(
                    length: $0, missing: $1, connections: request.options.connections, minSegment: request.options.minSegment)
            }
        part = Self.openPart(request, fresh: earlier.book == nil)
        if let book = earlier.book, case .success = part, earlier.resumedFrom > 0 {
            request.observer?.prefixCompleted(upTo: book.contiguousPrefix)
        }
    }

    /// Opens `request`'s part file, as a new file when `fresh` (`PartFile.init`).
    static func openPart(_ request: TransferRequest, fresh: Bool) -> Result<PartFile, TransferError> {
        Result { () throws(TransferError) in try PartFile(path: request.partPath, fresh: fresh, root: request.root) }
    }
}
