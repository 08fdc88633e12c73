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
