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

/// `transform` of every element at once, as child tasks: the results in the elements'
/// order, or the failure of the first element (in that order) that failed, whatever
/// finished first. For requests that each wait on a round trip (an apt suite's files).
func concurrentMap<Element: Sendable, Value: Sendable, Failure: Error>(
    _ elements: [Element], _ transform: @escaping @Sendable (Element) async throws(Failure) -> Value
) async throws(Failure) -> [Value] {
    let results = await withTaskGroup(of: (Int, Result<Value, Failure>).self) { group in
        for (index, element) in elements.enumerated() {
            group.addTask {
                do throws(Failure) { return (index, .success(try await transform(element))) } catch {
                    return (index, .failure(error))
                }
            }
        }
        var results = [Result<Value, Failure>?](repeating: nil, count: elements.count)
        for await (index, result) in group { results[index] = result }
        return results
    }
    // Every child reported: the group is awaited to its end.
    return try results.map { result throws(Failure) in try result!.get() }
}
