import DequeModule
import HeapModule

/// Items to fetch that wait for room in the engine's queue, in the order they start
/// (docs/engine.md#order-of-items): items of unknown size first, in the plan's order
/// (any of them may be large), then the largest known size first, equal sizes in the
/// plan's order.
///
/// Single-request items are each a round trip, a large one a stretch of one
/// connection's time: started in the plan's order, a large file near its end ran on
/// alone after the rest had finished (an apt repository's 1 MiB packages, 0.45 s of a
/// 2.96 s sync). Largest first leaves the small ones to fill the last slots.
///
/// Compact, as a 100,000-item first sync queues nearly every item: four bytes per
/// item of unknown size, eight per item of known size, instead of a request, a hasher
/// and a transfer object in the engine.
struct FetchQueue {
    /// `index << 1 | knownFresh`.
    private var unsized = Deque<UInt32>()
    /// The size (up to 2^31 − 1; larger sizes tie there) in the high 32 bits, then the
    /// index counted down from 2^31 − 1 (so the earlier item is the greater) and
    /// `knownFresh`: the greatest key is the item to start next.
    private var sized = Heap<UInt64>()
    private static let indexLimit = 0x7FFF_FFFF

    var isEmpty: Bool { unsized.isEmpty && sized.isEmpty }

    /// Queues item `index` (below 2^31), of `size` bytes when known.
    mutating func append(_ index: Int, knownFresh: Bool, size: Int64?) {
        precondition(index >= 0 && index < Self.indexLimit, "a plan holds fewer than 2^31 items")
        let fresh: UInt32 = knownFresh ? 1 : 0
        guard let size else {
            unsized.append(UInt32(index) << 1 | fresh)
            return
        }
        let high = UInt64(min(max(size, 0), Int64(Self.indexLimit))) << 32
        sized.insert(high | UInt64(UInt32(Self.indexLimit - index) << 1 | fresh))
    }

    /// The item to start next, removed; nil when none waits.
    mutating func popFirst() -> (index: Int, knownFresh: Bool)? {
        if let entry = unsized.popFirst() { return (Int(entry >> 1), entry & 1 == 1) }
        guard let key = sized.popMax() else { return nil }
        let low = UInt32(truncatingIfNeeded: key)
        return (Self.indexLimit - Int(low >> 1), low & 1 == 1)
    }
}
