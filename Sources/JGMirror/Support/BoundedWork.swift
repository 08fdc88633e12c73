import Foundation

/// Work run on a few threads, with at most `limit` pieces accepted and not finished:
/// `submit` makes its caller wait while the window is full. The code that walks a plan
/// submits the hashing of each present file through it, so a run that hashes 100,000
/// files holds a few closures (each with its item and, once running, a buffer and a
/// file descriptor) instead of 100,000, and the walk goes no faster than the hashing.
final class BoundedWork: Sendable {
    /// Most pieces accepted by `submit` and not finished.
    let limit: Int
    private let queue: OperationQueue
    private let slots: DispatchSemaphore
    private let counts = Locked<(inFlight: Int, most: Int)>((0, 0))
    /// Told each time `submit` finds the window full and waits (tests).
    private let onFull: (@Sendable () -> Void)?

    /// Runs on up to `threads` threads, accepting up to `limit` pieces at once.
    init(threads: Int, limit: Int, onFull: (@Sendable () -> Void)? = nil) {
        self.limit = max(1, limit)
        queue = OperationQueue()
        queue.maxConcurrentOperationCount = max(1, threads)
        slots = DispatchSemaphore(value: self.limit)
        self.onFull = onFull
    }

    /// The most pieces that were ever accepted by `submit` and not finished at once.
    var mostInFlight: Int { counts.value.most }

    /// Runs `body` on one of the threads once there is room in the window, waiting for
    /// it (back-pressure): never from a thread that work in the window waits for.
    func submit(_ body: @escaping @Sendable () -> Void) {
        if slots.wait(timeout: .now()) == .timedOut {
            onFull?()
            slots.wait()
        }
        counts.withLock { counts in
            counts.inFlight += 1
            counts.most = max(counts.most, counts.inFlight)
        }
        queue.addOperation {
            body()
            self.counts.withLock { $0.inFlight -= 1 }
            self.slots.signal()
        }
    }

    /// Runs `body` on one of the threads without taking room in the window, for a
    /// caller that must not wait (the transfer engine's thread) and whose work is
    /// bounded elsewhere (by the items handed to the engine at once).
    func submitWithoutWaiting(_ body: @escaping @Sendable () -> Void) {
        queue.addOperation(body)
    }
}
