import Foundation
import Synchronization

/// Fixed slots written from many threads, each slot once, read after all writers finish.
final class ResultSlots<Value: Sendable>: Sendable {
    private let storage: Mutex<[Value?]>

    init(count: Int) { storage = Mutex(Array(repeating: nil, count: count)) }

    func set(_ index: Int, _ value: Value) { storage.withLock { $0[index] = value } }

    /// Every slot's value; each must have been set.
    func values() -> [Value] { storage.withLock { $0.map { $0! } } }
}

/// A value shared across threads behind one lock; a class, so closures can share it.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }

    var value: Value { mutex.withLock { $0 } }
}

/// Values handed over from any thread and handled in batches, in order, on one
/// serial queue. A hand-over wakes the queue only when it is idle, so a busy producer
/// (the engine thread, finishing small files) pays a lock per value, not a thread
/// wake-up.
final class BatchedQueue<Element: Sendable>: Sendable {
    private let queue: DispatchQueue
    private let pending = Locked<[Element]>([])
    private let handle: @Sendable ([Element]) -> Void

    init(label: String, handle: @escaping @Sendable ([Element]) -> Void) {
        queue = DispatchQueue(label: label)
        self.handle = handle
    }

    func add(_ element: Element) {
        let first = pending.withLock { list -> Bool in
            list.append(element)
            return list.count == 1
        }
        if first { queue.async { self.drain() } }
    }

    private func drain() {
        let batch = pending.withLock { list -> [Element] in
            defer { list.removeAll() }
            return list
        }
        guard !batch.isEmpty else { return }
        handle(batch)
        if pending.withLock({ !$0.isEmpty }) { queue.async { self.drain() } }
    }
}

/// `transform` over `0..<count` on up to `threads` threads, results in index order.
func concurrentMap<Value: Sendable>(count: Int, threads: Int, _ transform: @Sendable (Int) -> Value) -> [Value] {
    guard count > 0 else { return [] }
    let results = ResultSlots<Value>(count: count)
    let next = Locked(0)
    DispatchQueue.concurrentPerform(iterations: max(1, min(threads, count))) { _ in
        while true {
            let index = next.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            guard index < count else { return }
            results.set(index, transform(index))
        }
    }
    return results.values()
}
