import Testing

@testable import JGMirror

/// `ItemTally` counts what an item's report says, without a server.
@Suite struct ItemTallyTests {
    @Test func eachKindOfRestartIsAllowedThreeTimesAndNotesWhy() {
        var tally = ItemTally()
        for round in 1...3 {
            let changed = tally.restart(because: "changed \(round)", counts: true)
            let refusedOnce = tally.restart(because: "refused \(round)", counts: false)
            #expect(changed == nil && refusedOnce == nil)
        }
        #expect(tally.note == "refused 3")
        // Refusals and changes are counted apart: a fourth of either ends the item,
        // a change as `changed`, a refusal as `range` (the file did not change).
        var refused = tally
        refused.lastError = .retryable(.connection, "transfer closed with 10 bytes remaining")
        let fourthRefusal = refused.restart(because: "refused 4", counts: false)
        #expect(fourthRefusal?.code == .range)
        #expect(fourthRefusal?.message.hasPrefix("the server refused byte ranges 4 times") == true)
        #expect(fourthRefusal?.message.hasSuffix("(last: transfer closed with 10 bytes remaining)") == true)
        let fourthChange = tally.restart(because: "changed 4", counts: true)
        #expect(fourthChange?.code == .changed)
        #expect(fourthChange?.message == "remote file kept changing during the download (changed 4)")
        #expect(tally.note == "changed 4")
    }

    @Test func theOutcomeCarriesTheCountsAndAtLeastOneConnection() {
        var tally = ItemTally()
        let none = tally.outcome(.skipped, length: nil, bytesDownloaded: 0, hasState: false, validators: Validators())
        #expect(none.connections == 1 && none.attempts == 1)
        tally.using(3)
        tally.using(2)
        tally.attempts += 4
        tally.resumedFrom = 100
        tally.note = "resumed"
        let outcome = tally.outcome(
            .completed, length: 1000, bytesDownloaded: 900, hasState: true, validators: Validators(etag: "\"a\""))
        #expect(outcome.connections == 3 && outcome.attempts == 5 && outcome.resumedFrom == 100)
        #expect(outcome.length == 1000 && outcome.bytesDownloaded == 900 && outcome.hasState && outcome.note == "resumed")
        #expect(outcome.validators == Validators(etag: "\"a\""))
    }
}
