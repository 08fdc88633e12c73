import Foundation
import Testing

@testable import JGMirror

/// `ByteRange`: the half-open byte ranges an item's regions and resume state are made of.
@Suite struct ByteRangeTests {
    @Test func normalizedSortsAndMerges() {
        #expect(
            ByteRange.normalized([ByteRange(lower: 5, upper: 9), ByteRange(lower: 0, upper: 5), ByteRange(lower: 20, upper: 30)])
                == [ByteRange(lower: 0, upper: 9), ByteRange(lower: 20, upper: 30)])
    }
}
