import Foundation

extension WorkPool {
    /// Computing jobs of which at most `limit` are accepted and not finished: `submit`
    /// makes its caller wait while the window is full. The walk of a plan submits the
    /// hashing of each present file through it, so a run that hashes 100,000 files
    /// holds a few closures (each with its item and, once running, a buffer and a file
    /// descriptor) instead of 100,000, and the walk goes no faster than the hashing.
    final class Window: Sendable {
        /// Most jobs accepted by `submit` and not finished.
        let limit: Int
        private let pool: WorkPool
        private let slots: DispatchSemaphore
        private let counts = Locked<(inFlight: Int, most: Int)>((0, 0))
        /// Told each time `submit` finds the window full and waits (tests).
        private let onFull: (@Sendable () -> Void)?

        init(on pool: WorkPool, limit: Int, onFull: (@Sendable () -> Void)? = nil) {
            self.pool = pool
            self.limit = max(1, limit)
            slots = DispatchSemaphore(value: self.limit)
            self.onFull = onFull
        }

        /// The most jobs that were ever accepted by `submit` and not finished at once.
        var mostInFlight: Int { counts.value.most }

        /// Runs `body` as a computing job once there is room in the window, waiting for
        /// it (back-pressure): only from a blocking job or a thread outside the pool,
        /// never from a computing job, which the window's jobs may be queued behind.
        func submit(_ body: @escaping @Sendable () -> Void) {
            if slots.wait(timeout: .now()) == .timedOut {
                onFull?()
                slots.wait()
            }
            counts.withLock { counts in
                counts.inFlight += 1
                counts.most = max(counts.most, counts.inFlight)
            }
            pool.submit(.computing) {
                body()
                self.counts.withLock { $0.inFlight -= 1 }
                self.slots.signal()
            }
        }

        /// Runs `body` as a computing job without taking room in the window, for a
        /// caller that must not wait (the transfer engine's thread) and whose work is
        /// bounded elsewhere (by the items handed to the engine at once).
        func submitWithoutWaiting(_ body: @escaping @Sendable () -> Void) {
            pool.submit(.computing, body)
        }
    }
}
