import DequeModule
import Foundation
import Synchronization

/// The threads a run's work off the engine thread runs on: the hashing of present
/// files, the walk of the plan, finishing and placing downloads, the state database,
/// and each step of the session that touches the disk. Never Swift's cooperative
/// pool: it has one thread per core for every task of the process, and a run that
/// blocked it on a slow disk would stall the caller's other tasks (and, in one
/// process, the other runs).
///
/// Two kinds of job, so that no job ever waits for one that has no thread to run on:
/// - `computing` jobs (hashing) run at most `computingThreads` at once, first in,
///   first out. They never wait for another job of the pool.
/// - `blocking` jobs get a thread at once. They may wait for the disk, the database,
///   or computing jobs (the walk waits for the hashing window). A run has a few at a
///   time: the walk, the session's current step, the database's opening, and one per
///   `Lane` with work.
///
/// So the pool holds at most `computingThreads` threads plus those few. A thread that
/// finishes a job takes the next computing job, or parks until it is handed one: a
/// run starts a handful of threads, not one per step. Each is a loop on a serial
/// dispatch queue of its own, which libdispatch gives a thread at once. Once the pool
/// is closed (or let go), the loops end when they have nothing to do and libdispatch
/// takes the threads back; a job submitted after that still runs, on a loop that ends
/// with it.
final class WorkPool: Sendable {
    /// What a job may wait for; it decides when the job gets a thread.
    enum Kind: Sendable {
        /// Uses a core and waits for no other job: queued while `computingThreads` run.
        case computing
        /// May wait for the disk or for other jobs: gets a thread at once.
        case blocking
    }

    typealias Job = @Sendable () -> Void

    /// Most computing jobs that run at once.
    let computingThreads: Int
    private let threads: Threads

    init(computingThreads: Int) {
        self.computingThreads = max(1, computingThreads)
        threads = Threads(computingThreads: self.computingThreads)
    }

    deinit { threads.close() }

    /// Runs `job` on one of the pool's threads; returns at once.
    func submit(_ kind: Kind, _ job: @escaping Job) {
        threads.submit(kind, job)
    }

    /// Runs `body` as a blocking job and suspends the caller until it returns.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            submit(.blocking) { continuation.resume(returning: body()) }
        }
    }

    /// Lets threads end once they have nothing to do. Jobs already submitted run, and
    /// later ones too.
    func close() { threads.close() }

    /// The most threads the pool had at once (tests).
    var mostThreads: Int { threads.state.withLock { $0.most } }

    /// The threads the pool ever started (tests).
    var threadsStarted: Int { threads.state.withLock { $0.started } }

    /// The threads the pool has now (tests).
    var threadCount: Int { threads.state.withLock { $0.count } }

    /// Blocks until every thread has ended: only after `close`, with no job that
    /// waits for the caller (tests).
    func waitForThreadsToEnd() {
        let ended = threads.state.withLock { state -> DispatchSemaphore? in
            guard state.count > 0 else { return nil }
            let ended = DispatchSemaphore(value: 0)
            state.onEmpty.append(ended)
            return ended
        }
        ended?.wait()
    }
}

extension WorkPool {
    /// Where a thread parks: it waits on `wake` for the job it is handed, or for none
    /// (end). Each thread has one for its life and is parked at most once at a time.
    private final class Parked: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let handed = Mutex<(Job, Kind)?>(nil)
    }

    /// The threads and their queue, apart from `WorkPool`, so that parked threads do
    /// not keep the pool alive and letting it go closes it.
    private final class Threads: Sendable {
        struct State {
            /// Computing jobs waiting for one of the `computing` running to finish.
            var queued = Deque<Job>()
            /// Computing jobs running or handed to a thread.
            var computing = 0
            /// Threads waiting to be handed a job, the latest last.
            var parked: [Parked] = []
            /// Threads alive now, the most at once, and ever started.
            var count = 0
            var most = 0
            var started = 0
            var closed = false
            /// Told when the last thread ends (`waitForThreadsToEnd`).
            var onEmpty: [DispatchSemaphore] = []

            mutating func threadEnded() {
                count -= 1
                guard count == 0 else { return }
                for ended in onEmpty { ended.signal() }
                onEmpty = []
            }
        }

        let state = Mutex(State())
        let computingThreads: Int

        init(computingThreads: Int) { self.computingThreads = computingThreads }

        func submit(_ kind: Kind, _ job: @escaping Job) {
            // A job is handed to a parked thread, or a new one, under the lock; a
            // computing job over the limit waits for a running one to finish.
            let handedTo = state.withLock { state -> Parked?? in
                if kind == .computing {
                    guard state.computing < computingThreads else {
                        state.queued.append(job)
                        return nil
                    }
                    state.computing += 1
                }
                if let parked = state.parked.popLast() {
                    parked.handed.withLock { $0 = (job, kind) }
                    return .some(parked)
                }
                state.count += 1
                state.started += 1
                state.most = max(state.most, state.count)
                return .some(nil)
            }
            switch handedTo {
            case .none: break
            case .some(.some(let parked)): parked.wake.signal()
            case .some(.none):
                // A thread of libdispatch's, not one of our own: a serial queue has one
                // at once. A thread we started and ended would take libdispatch's
                // per-thread caches with it while `concurrentPerform` (which hashing
                // calls) still used them: a double free, seen under AddressSanitizer.
                DispatchQueue(label: "jgmirror.pool").async { self.work(job, kind) }
            }
        }

        func close() {
            let parked = state.withLock { state -> [Parked] in
                state.closed = true
                defer { state.parked = [] }
                return state.parked
            }
            for thread in parked { thread.wake.signal() }
        }

        /// A thread's life: runs what it is handed and the computing jobs queued after
        /// it, then parks, until the pool is closed.
        private func work(_ job: @escaping Job, _ kind: Kind) {
            let parking = Parked()
            var next: (Job, Kind)? = (job, kind)
            while let (job, kind) = next {
                job()
                next = nil
                let parks = state.withLock { state -> Bool in
                    if kind == .computing {
                        if let queued = state.queued.popFirst() {
                            next = (queued, .computing)
                            return false
                        }
                        state.computing -= 1
                    }
                    guard !state.closed else {
                        state.threadEnded()
                        return false
                    }
                    state.parked.append(parking)
                    return true
                }
                if parks {
                    parking.wake.wait()
                    next = parking.handed.withLock { handed in
                        defer { handed = nil }
                        return handed
                    }
                    // Woken by `close`, with nothing handed to it.
                    if next == nil { state.withLock { $0.threadEnded() } }
                }
            }
        }
    }
}
