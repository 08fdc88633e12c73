/// What an item takes over from an earlier run's files (docs/engine.md#resume-state): the saved
/// progress when its resume state (`.jgd`) is valid for this item and its part
/// file, else nothing, with what the earlier run left behind removed so no byte
/// of it is trusted.
///
/// File work only (stat, read, unlink below the item's root); the item adopts the
/// result. Runs off the engine thread, in `ItemPreparation`.
struct EarlierRun: Sendable {
    /// The saved ranges, with what is still missing; nil when nothing is resumed.
    var book: SegmentBook?
    /// The validators the saved bytes belong to.
    var validators = Validators()
    /// Bytes already present in the part file.
    var resumedFrom: Int64 = 0
    /// Why saved state was discarded, for the report.
    var note: String?

    /// Looks at `request`'s part file and resume state: adopts valid state, turned
    /// into a book by `makeBook(length, missing)`, or removes what cannot be
    /// vouched for (any part file without state, and both when resume is off).
    static func takeOver(_ request: TransferRequest, makeBook: (Int64, [ByteRange]) -> SegmentBook) -> EarlierRun {
        var found = EarlierRun()
        let root = request.root
        let partInfo = root.status(request.partPath)
        let partExists = partInfo != nil
        let partSize = partInfo.map { Int64($0.st_size) }
        let stateExists = root.status(request.statePath) != nil
        if !request.resume || !stateExists {
            // Resume is off, or a part file has no state and holds nothing we can vouch for;
            // one another process is writing is its own (opening it fails as `locked`).
            if stateExists { root.unlink(request.statePath) }
            if partExists, !PartFile.isHeld(request.partPath, root: root) { root.unlink(request.partPath) }
            return found
        }
        if let partInfo, partInfo.st_nlink > 1 {
            // Another name shares the part file's bytes (a tree copied with hard links):
            // writing on would change that file too.
            found.note = "part file \(request.partPath) has other hard links; restarted from zero"
            root.unlink(request.statePath)
            root.unlink(request.partPath)
            return found
        }
        switch ResumeState.load(path: request.statePath, url: request.resumeIdentity, partSize: partSize, root: root) {
        case .valid(let state):
            let book = makeBook(state.length, state.missingRanges)
            found.book = book
            found.validators = state.validators
            found.resumedFrom = book.present
        case .discarded(let reason):
            found.note = reason
            root.unlink(request.statePath)
            root.unlink(request.partPath)
        case .none:
            if partExists { root.unlink(request.partPath) }
        }
        return found
    }
}
