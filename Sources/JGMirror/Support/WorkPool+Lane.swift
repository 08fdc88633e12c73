import Foundation

extension WorkPool {
    /// Values handed over from any thread and handled in batches, in order, by one
    /// blocking job of the pool at a time. A hand-over starts that job only when none
    /// is under way, so a busy producer (the engine thread, finishing small files)
    /// pays a lock per value, not a thread wake-up; values handed over while a batch
    /// is handled go together in the next.
    final class Lane<Element: Sendable>: Sendable {
        private struct State {
            var pending: [Element] = []
            /// A job is handling batches; it stops when none is left.
            var draining = false
            /// Told when the job stops (`wait`).
            var idle: [DispatchSemaphore] = []
        }

        private let pool: WorkPool
        private let state = Locked(State())
        private let handle: @Sendable ([Element]) -> Void

        init(on pool: WorkPool, handle: @escaping @Sendable ([Element]) -> Void) {
            self.pool = pool
            self.handle = handle
        }

        func add(_ element: Element) {
            let start = state.withLock { state -> Bool in
                state.pending.append(element)
                defer { state.draining = true }
                return !state.draining
            }
            if start { pool.submit(.blocking) { self.drain() } }
        }

        /// Blocks until every value handed over so far has been handled.
        func wait() {
            let idle = state.withLock { state -> DispatchSemaphore? in
                guard state.draining else { return nil }
                let idle = DispatchSemaphore(value: 0)
                state.idle.append(idle)
                return idle
            }
            idle?.wait()
        }

        private func drain() {
            while true {
                let batch = state.withLock { state -> [Element] in
                    defer { state.pending = [] }
                    if state.pending.isEmpty {
                        state.draining = false
                        for idle in state.idle { idle.signal() }
                        state.idle = []
                    }
                    return state.pending
                }
                guard !batch.isEmpty else { return }
                handle(batch)
            }
        }
    }
}
