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
