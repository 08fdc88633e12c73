import PropertyBased
import Testing

@testable import JGMirror

@Suite struct SegmentBookTests {
    private let mebibyte: Int64 = 1 << 20

    @Test func aFreshFileSplitsIntoEqualFrontFirstRegions() {
        var book = SegmentBook(length: 64 * mebibyte, connections: 4, minSegment: mebibyte)
        #expect(book.next(for: 0) == ByteRange(lower: 0, upper: 16 * mebibyte))
        #expect(book.next(for: 1) == ByteRange(lower: 16 * mebibyte, upper: 32 * mebibyte))
        #expect(book.next(for: 2) == ByteRange(lower: 32 * mebibyte, upper: 48 * mebibyte))
        #expect(book.next(for: 3) == ByteRange(lower: 48 * mebibyte, upper: 64 * mebibyte))
        #expect(book.unowned == 0 && book.remaining == 64 * mebibyte && book.contiguousPrefix == 0)
        #expect(book.missing == [ByteRange(lower: 0, upper: 64 * mebibyte)])
    }

    /// Lengths up to the largest any input may give (and past it, as a server's could
    /// be) are dealt, stolen and recorded without overflowing.
    @Test(arguments: [Rules.maximumSize, Int64.max - 1])
    func theLargestLengthsAreDealtWithoutOverflow(length: Int64) throws {
        var book = SegmentBook(length: length, connections: 8, minSegment: mebibyte)
        for owner in 0..<8 { #expect(book.next(for: owner) != nil) }
        #expect(book.unowned == 0 && book.remaining == length)
        let first = try #require(book.region(of: 0))
        #expect(book.record(0, at: first.start, count: first.end - first.start) == first.end - first.start)
        #expect(book.next(for: 0) != nil)  // a steal
        book.giveBack(3)
        #expect(book.next(for: 3) != nil)
    }

    @Test func aCapKeepsRegionsSmallAndTheLastPieceIsNeverBelowTheMinimum() {
        var book = SegmentBook(length: 10 * mebibyte + 100, connections: 2, minSegment: mebibyte, regionCap: 4 * mebibyte)
        #expect(book.next(for: 0) == ByteRange(lower: 0, upper: 4 * mebibyte))
        #expect(book.next(for: 1) == ByteRange(lower: 4 * mebibyte, upper: 8 * mebibyte))
        #expect(book.record(0, at: 0, count: 4 * mebibyte) == 4 * mebibyte)
        // 2 mebibyte + 100 left: a 2 mebibyte share would leave 100 bytes, so it is taken whole.
        #expect(book.next(for: 0) == ByteRange(lower: 8 * mebibyte, upper: 10 * mebibyte + 100))
        #expect(book.contiguousPrefix == 4 * mebibyte)
    }

    @Test func stealingCutsTheVictimsEndAndRefusesItsBytesPastTheCut() {
        var book = SegmentBook(length: 16 * mebibyte, connections: 2, minSegment: mebibyte)
        _ = book.next(for: 0)
        _ = book.next(for: 1)
        #expect(book.record(1, at: 8 * mebibyte, count: 8 * mebibyte) == 8 * mebibyte)
        #expect(book.record(0, at: 0, count: 2 * mebibyte) == 2 * mebibyte)
        // Connection 1 is done: it steals the back half of connection 0's 6 mebibyte.
        #expect(book.next(for: 1) == ByteRange(lower: 5 * mebibyte, upper: 8 * mebibyte))
        #expect(book.region(of: 0)?.end == 5 * mebibyte)
        // The victim's request keeps going; what it delivers past the cut is refused.
        #expect(book.record(0, at: 2 * mebibyte, count: 4 * mebibyte) == 3 * mebibyte)
        #expect(book.overrun == mebibyte)
        #expect(book.contiguousPrefix == 5 * mebibyte)
        #expect(book.record(1, at: 5 * mebibyte, count: 3 * mebibyte) == 3 * mebibyte)
        #expect(book.isComplete && book.missing.isEmpty && book.written == 16 * mebibyte)
    }

    @Test func stealingByFinishTimeLeavesASlowVictimWhatItFetchesWhileTheOthersFinish() {
        // 4 connections × 8 mebibyte; connection 2 runs at a tenth of the others' 4 MB/s.
        var book = SegmentBook(length: 32 * mebibyte, connections: 4, minSegment: mebibyte)
        for owner in 0..<4 { _ = book.next(for: owner) }
        for owner in [0, 1, 3] {
            #expect(book.record(owner, at: Int64(owner) * 8 * mebibyte, count: 8 * mebibyte) == 8 * mebibyte)
        }
        #expect(book.record(2, at: 16 * mebibyte, count: mebibyte) == mebibyte)
        let rates: [Int: Double] = [0: 4e6, 1: 4e6, 2: 4e5, 3: 4e6]
        // 7 mebibyte missing over 12.4 MB/s, plus the thief's 0.1 s: the slow one keeps
        // 0.4 MB/s × 0.69 s ≈ 276 kB, cut at 64 KiB, not the half halving would leave.
        // The thief fetches 4 MB/s × 0.59 s ≈ 2.4 MB by then: the 6.75 mebibyte rest
        // splits into three pieces of 2.25 mebibyte, and the thief takes the first.
        let stolen = book.stealFinishingTogether(for: 0, rates: rates, latency: 0.1)
        let cut = 17 * mebibyte + 256 * 1024
        let piece = 2 * mebibyte + 256 * 1024
        #expect(stolen == ByteRange(lower: cut, upper: cut + piece))
        #expect(book.region(of: 2)?.end == cut)
        // The other two go back to the pool: the victim's request is cut once, and the
        // connections that finish next take them with requests of their own.
        #expect(book.pool == [ByteRange(lower: cut + piece, upper: 24 * mebibyte)])
        #expect(book.take(for: 1) == ByteRange(lower: cut + piece, upper: cut + 2 * piece))
        #expect(book.take(for: 3) == ByteRange(lower: cut + 2 * piece, upper: 24 * mebibyte))
    }

    @Test func aVictimStillWaitingForItsFirstByteKeepsLessAndAThiefGetsAtLeastTheMinimum() {
        // Two thieves of 4 MB/s; connection 1 has 4 mebibyte left. Streaming, it would keep
        // 4 MB/s × (4 mebibyte + 4 MB/s × 0.1 s) / 8 MB/s ≈ 2.3 MB; still 0.09 s from its
        // first byte, it keeps 4 MB/s × (0.62 s − 0.09 s) ≈ 2.1 MB.
        func book() -> SegmentBook {
            var book = SegmentBook(length: 8 * mebibyte, connections: 2, minSegment: mebibyte)
            _ = book.next(for: 0)
            _ = book.next(for: 1)
            _ = book.record(0, at: 0, count: 4 * mebibyte)
            return book
        }
        var streaming = book()
        var waiting = book()
        let rates: [Int: Double] = [0: 4e6, 1: 4e6]
        let fromStreaming = streaming.stealFinishingTogether(for: 0, rates: rates, latency: 0.1)
        let fromWaiting = waiting.stealFinishingTogether(for: 0, rates: rates, startsIn: [1: 0.09], latency: 0.1)
        #expect(fromStreaming?.lower == 4 * mebibyte + 2 * mebibyte + 192 * 1024)
        #expect(fromWaiting?.lower == 4 * mebibyte + 2 * mebibyte)
        // 1.5 mebibyte left: an even split would give the thief less than min_segment, so
        // it takes exactly 1 mebibyte and the victim keeps the rest.
        var short = SegmentBook(length: 4 * mebibyte, connections: 2, minSegment: mebibyte)
        _ = short.next(for: 0)
        _ = short.next(for: 1)
        _ = short.record(0, at: 0, count: 2 * mebibyte)
        _ = short.record(1, at: 2 * mebibyte, count: mebibyte / 2)
        #expect(
            short.stealFinishingTogether(for: 0, rates: rates, latency: 0.01)
                == ByteRange(lower: 3 * mebibyte, upper: 4 * mebibyte))
    }

    @Test func aStalledVictimKeepsNothingWhateverItsSizeAndAUselessStealIsRefused() {
        var book = SegmentBook(length: 4 * mebibyte, connections: 2, minSegment: mebibyte)
        _ = book.next(for: 0)
        _ = book.next(for: 1)
        #expect(book.record(0, at: 0, count: 2 * mebibyte) == 2 * mebibyte)
        #expect(book.record(1, at: 2 * mebibyte, count: 2 * mebibyte - 1000) == 2 * mebibyte - 1000)
        // 1000 bytes left, far below min_segment: taken only because its owner stalled.
        #expect(book.stealFinishingTogether(for: 0, rates: [0: 1e6, 1: 1e6], latency: 0.01) == nil)
        #expect(
            book.stealFinishingTogether(for: 0, rates: [0: 1e6, 1: 0], latency: 0.01)
                == ByteRange(lower: 4 * mebibyte - 1000, upper: 4 * mebibyte))
        #expect(book.region(of: 1)?.remaining == 0)
        // A thief that would not finish sooner than the victim takes nothing.
        var slow = SegmentBook(length: 8 * mebibyte, connections: 2, minSegment: mebibyte)
        _ = slow.next(for: 0)
        _ = slow.next(for: 1)
        #expect(slow.record(0, at: 0, count: 4 * mebibyte) == 4 * mebibyte)
        #expect(slow.stealFinishingTogether(for: 0, rates: [0: 1e5, 1: 4e6], latency: 0.1) == nil)
        #expect(slow.stealFinishingTogether(for: 0, rates: [0: 4e6, 1: 4e6], latency: 2) == nil)
    }

    @Test func noStealBelowTwiceTheMinimumAndBytesOutOfOrderAreRefused() {
        var book = SegmentBook(length: 3 * mebibyte, connections: 2, minSegment: 2 * mebibyte)
        #expect(book.next(for: 0) == ByteRange(lower: 0, upper: 3 * mebibyte))
        #expect(book.next(for: 1) == nil)
        #expect(book.record(0, at: 5, count: 10) == 0)
        #expect(book.record(7, at: 0, count: 10) == 0)
    }

    @Test func aGivenBackRegionReturnsToThePoolAndIsTakenAgain() {
        var book = SegmentBook(length: 8 * mebibyte, connections: 2, minSegment: mebibyte)
        _ = book.next(for: 0)
        _ = book.next(for: 1)
        #expect(book.record(0, at: 0, count: mebibyte) == mebibyte)
        book.giveBack(0)
        #expect(book.unowned == 3 * mebibyte && book.region(of: 0) == nil)
        #expect(book.missing == [ByteRange(lower: mebibyte, upper: 8 * mebibyte)])
        #expect(book.next(for: 1) == nil, "connection 1 still has its region")
        #expect(book.next(for: 5) == ByteRange(lower: mebibyte, upper: 4 * mebibyte))
    }

    @Test func aResumedBookStartsFromItsMissingRangesAndClaimsExactRanges() {
        let missing = [ByteRange(lower: 2 * mebibyte, upper: 3 * mebibyte), ByteRange(lower: 6 * mebibyte, upper: 8 * mebibyte)]
        var book = SegmentBook(length: 8 * mebibyte, missing: missing, connections: 4, minSegment: mebibyte)
        #expect(book.present == 5 * mebibyte && book.contiguousPrefix == 2 * mebibyte && book.missing == missing)
        #expect(
            book.claim(ByteRange(lower: 6 * mebibyte, upper: 7 * mebibyte), for: 0)
                == ByteRange(lower: 6 * mebibyte, upper: 7 * mebibyte))
        #expect(book.claim(ByteRange(lower: 5 * mebibyte, upper: 7 * mebibyte), for: 1) == nil)
        #expect(book.next(for: 1) == ByteRange(lower: 2 * mebibyte, upper: 3 * mebibyte))
        #expect(book.missing == missing)
    }

    @Test func theRegionCapBalancesRoundTripsAgainstTheHashTail() {
        // Loopback: a few mebibyte per region; a 200 ms link: one region per connection.
        let loopback = SegmentBook.regionCap(length: 1 << 30, connections: 4, roundTrip: 0.000_2)
        #expect(loopback.map { $0 > mebibyte && $0 < 16 * mebibyte } == true)
        let far = SegmentBook.regionCap(length: 48 * mebibyte, connections: 8, roundTrip: 0.2)
        #expect(far.map { $0 >= 48 * mebibyte / 8 } == true)
        #expect(SegmentBook.regionCap(length: 48 * mebibyte, connections: 1, roundTrip: 0.2) == nil)
    }

    /// One step of a random interleaving, decoded from a random integer.
    private enum Step {
        case next(Int)
        case steal(Int)
        case stealTogether(Int, [Int: Double])
        case deliver(Int, Int64)
        case deliverElsewhere(Int)
        case giveBack(Int)

        init(_ raw: Int, connections: Int) {
            let owner = (raw / 8) % (connections + 1)  // one more id than connections: a newcomer
            let amount = Int64((raw / 64) % 700) + 1
            switch raw % 8 {
            case 0: self = .next(owner)
            case 1:
                // Rates from the raw bits: 0 (stalled) to 3 units per connection.
                let rates = Dictionary(uniqueKeysWithValues: (0...connections).map { ($0, Double((raw >> (10 + 2 * $0)) & 3)) })
                self = .stealTogether(owner, rates)
            case 2: self = .steal(owner)
            case 3, 4, 5: self = .deliver(owner, amount)
            case 6: self = .deliverElsewhere(owner)
            default: self = .giveBack(owner)
            }
        }
    }

    /// Checks the book against a byte-by-byte model of what was written.
    private func checkInvariants(_ book: SegmentBook, writes: [Int]) {
        let length = Int(book.length)
        var owed = [Int](repeating: 0, count: length)
        var regionsSound = true
        for range in book.pool { for byte in Int(range.lower)..<Int(range.upper) { owed[byte] += 1 } }
        for region in book.regions.values {
            regionsSound = regionsSound && region.start <= region.next && region.next <= region.end && region.end <= book.length
            for byte in Int(region.next)..<Int(min(region.end, book.length)) { owed[byte] += 1 }
        }
        #expect(regionsSound)
        #expect(ByteRange.normalized(book.pool) == book.pool, "the pool stays sorted and merged")
        // Exactly once: each byte is either still owed (by the pool or one region) or written, never both.
        let wrong = (0..<length).first { owed[$0] + writes[$0] != 1 }
        #expect(wrong == nil, "byte \(wrong ?? 0): owed \(wrong.map { owed[$0] } ?? 0), written \(wrong.map { writes[$0] } ?? 0)")
        let firstMissing = writes.firstIndex(of: 0) ?? length
        #expect(book.contiguousPrefix == Int64(firstMissing))
        var missing: [ByteRange] = []
        for byte in 0..<length where writes[byte] == 0 {
            if let last = missing.last, last.upper == Int64(byte) {
                missing[missing.count - 1].upper += 1
            } else {
                missing.append(ByteRange(lower: Int64(byte), upper: Int64(byte + 1)))
            }
        }
        #expect(book.missing == missing)
    }

    @Test func randomInterleavingsNeverLoseOrDuplicateAByte() async {
        await propertyCheck(
            count: 80, input: Gen.int(in: 1...1500), Gen.int(in: 1...5), Gen.int(in: 1...40),
            Gen.int(in: 0...Int(Int32.max)).array(of: 0...120)
        ) { length, connections, minSegment, raws in
            // A resumed item: every seventh 50-byte block is present already.
            let present = Set(stride(from: 0, to: length, by: 350).flatMap { $0..<min(length, $0 + 50) })
            let missing = ByteRange.normalized(
                (0..<length).filter { !present.contains($0) }.map { ByteRange(lower: Int64($0), upper: Int64($0 + 1)) })
            var book = SegmentBook(
                length: Int64(length), missing: missing, connections: connections, minSegment: Int64(minSegment))
            var writes = (0..<length).map { present.contains($0) ? 1 : 0 }
            var delivered: Int64 = 0
            func deliver(_ owner: Int, _ count: Int64) {
                guard let region = book.region(of: owner) else { return }
                let accepted = book.record(owner, at: region.next, count: count)
                #expect(accepted == min(count, region.remaining))
                delivered += count
                for byte in Int(region.next)..<Int(region.next + accepted) { writes[byte] += 1 }
            }
            for raw in raws {
                switch Step(raw, connections: connections) {
                case .next(let owner): _ = book.next(for: owner)
                case .steal(let owner): _ = book.stealHalf(for: owner)
                case .stealTogether(let owner, let rates):
                    // Politeness refuses some cuts, so that the next victim is weighed too.
                    _ = book.stealFinishingTogether(for: owner, rates: rates, latency: Double(raw % 3)) { victim, _, _ in
                        victim != 2
                    }
                case .deliver(let owner, let count): deliver(owner, count)
                case .deliverElsewhere(let owner):
                    if let region = book.region(of: owner) { #expect(book.record(owner, at: region.next + 1, count: 5) == 0) }
                case .giveBack(let owner): book.giveBack(owner)
                }
                checkInvariants(book, writes: writes)
            }
            // Whatever happened, the connections can still finish the file: given-back
            // ranges are taken again and nothing is stranded.
            var rounds = 0
            while !book.isComplete, rounds < 10_000 {
                rounds += 1
                for owner in 0...connections {
                    if book.region(of: owner).map({ $0.remaining == 0 }) ?? true { _ = book.next(for: owner) }
                    deliver(owner, 97)
                }
            }
            checkInvariants(book, writes: writes)
            #expect(book.isComplete)
            #expect(writes.allSatisfy { $0 == 1 })
            #expect(book.written + book.overrun == delivered)
        }
    }
}

extension SegmentBook {
    /// The front of the pool, else the back half of the largest region (`stealHalf`).
    fileprivate mutating func next(for owner: Owner) -> ByteRange? { take(for: owner) ?? stealHalf(for: owner) }
}
