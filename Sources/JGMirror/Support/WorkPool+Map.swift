import Foundation

extension WorkPool {
    /// `transform` over `0..<count` as computing jobs of the pool (at most
    /// `computingThreads` at once, each taking the next index until none is left),
    /// results in index order. Suspends the caller until all are done without holding
    /// one of Swift's shared threads: `verify` hashes a tree this way.
    func map<Value: Sendable>(count: Int, _ transform: @escaping @Sendable (Int) -> Value) async -> [Value] {
        guard count > 0 else { return [] }
        let results = ResultSlots<Value>(count: count)
        let next = Locked(0)
        let jobs = min(computingThreads, count)
        let running = Locked(jobs)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for _ in 0..<jobs {
                submit(.computing) {
                    while true {
                        let index = next.withLock { value -> Int in
                            defer { value += 1 }
                            return value
                        }
                        guard index < count else { break }
                        results.set(index, transform(index))
                    }
                    let last = running.withLock { value -> Bool in
                        value -= 1
                        return value == 0
                    }
                    if last { done.resume() }
                }
            }
        }
        return results.values()
    }
}
