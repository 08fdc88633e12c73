import Foundation
import Testing

@testable import JGMirror

/// The run's threads off the engine's: computing jobs bounded, blocking jobs never
/// starved by them, threads reused and ended, lanes in order, windows bounded.
@Suite struct WorkPoolTests {
    /// How many of a set of jobs run at once, at most.
    final class Overlap: Sendable {
        private let counts = Locked<(now: Int, most: Int)>((0, 0))
        var most: Int { counts.value.most }

        func during(_ body: () -> Void) {
            counts.withLock { counts in
                counts.now += 1
                counts.most = max(counts.most, counts.now)
            }
            body()
            counts.withLock { $0.now -= 1 }
        }
    }

    /// Computing jobs past the limit wait for one to finish, and the threads that ran
    /// the first ones run the rest: none is started for them.
    @Test(arguments: [1, 2, 3])
    func computingJobsRunAtMostTheLimitAtOnce(limit: Int) {
        let pool = WorkPool(computingThreads: limit)
        let gate = DispatchSemaphore(value: 0)
        let overlap = Overlap()
        let done = DispatchGroup()
        for _ in 0..<40 {
            done.enter()
            pool.submit(.computing) {
                overlap.during { gate.wait() }
                done.leave()
            }
        }
        // Every job is waiting at the gate or queued behind those that are.
        for _ in 0..<40 { gate.signal() }
        done.wait()
        #expect(overlap.most <= limit)
        #expect(pool.mostThreads == limit)
    }

    /// A blocking job runs while every computing thread waits for it: with one
    /// computing thread, a computing job that waits for a blocking one submitted after
    /// it, the state database's opening for example, does not hold it up.
    @Test func aBlockingJobRunsWhileEveryComputingThreadWaitsForIt() {
        let pool = WorkPool(computingThreads: 1)
        let opened = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let timedOut = Locked(false)
        pool.submit(.computing) {
            if opened.wait(timeout: .now() + 30) == .timedOut { timedOut.withLock { $0 = true } }
            finished.signal()
        }
        pool.submit(.blocking) { opened.signal() }
        finished.wait()
        #expect(!timedOut.value)
    }

    /// A blocking job that waits for the window it submits through (the walk and the
    /// hashing) finishes however small the pool and the window are.
    @Test(arguments: [(1, 1), (2, 8), (3, 5)])
    func aBlockingJobFeedingAWindowFinishes(threads: Int, limit: Int) {
        let pool = WorkPool(computingThreads: threads)
        let window = WorkPool.Window(on: pool, limit: limit)
        let overlap = Overlap()
        let ran = Locked(0)
        // A deadlock fails the test after 30 s instead of hanging the suite: the feeder
        // gives up on a window that stays full.
        let feeder = DispatchSemaphore(value: 0)
        pool.submit(.blocking) {
            let done = DispatchGroup()
            for _ in 0..<300 {
                done.enter()
                window.submit {
                    overlap.during { ran.withLock { $0 += 1 } }
                    done.leave()
                }
            }
            done.wait()
            feeder.signal()
        }
        #expect(feeder.wait(timeout: .now() + 30) == .success)
        #expect(ran.value == 300)
        #expect(overlap.most <= min(threads, limit))
        #expect(window.mostInFlight <= limit)
    }

    /// Every piece waits until the submitter has found the window full (or, were there
    /// no window, submitted everything): only the bound keeps the count down, however
    /// the threads are scheduled.
    @Test(arguments: [(1, 1), (2, 8), (3, 5)])
    func submittedWorkNeverExceedsTheWindow(threads: Int, limit: Int) {
        // Once open, each piece passes it on to the next.
        let gate = DispatchSemaphore(value: 0)
        let opened = Locked(false)
        let open: @Sendable () -> Void = {
            if opened.withLock({ opened in
                defer { opened = true }
                return !opened
            }) {
                gate.signal()
            }
        }
        let pool = WorkPool(computingThreads: threads)
        let window = WorkPool.Window(on: pool, limit: limit, onFull: open)
        let done = DispatchGroup()
        let ran = Locked(0)
        for _ in 0..<200 {
            done.enter()
            window.submit {
                gate.wait()
                gate.signal()
                ran.withLock { $0 += 1 }
                done.leave()
            }
        }
        open()
        done.wait()
        #expect(ran.value == 200)
        #expect(window.mostInFlight == limit)
    }

    @Test func workSubmittedWithoutWaitingRunsOutsideTheWindow() {
        let window = WorkPool.Window(on: WorkPool(computingThreads: 2), limit: 1)
        let done = DispatchGroup()
        for _ in 0..<10 {
            done.enter()
            window.submitWithoutWaiting { done.leave() }
        }
        done.wait()
        #expect(window.mostInFlight == 0)
    }

    /// Steps run one after another reuse a parked thread instead of starting one each.
    @Test func aThreadThatFinishedAJobRunsTheNext() async {
        let pool = WorkPool(computingThreads: 1)
        var sum = 0
        for value in 0..<200 { sum += await pool.run { value } }
        #expect(sum == 199 * 200 / 2)
        // A thread that has just resumed its caller may not have parked yet when the
        // next step comes: a second thread then, rarely a third; never one per step.
        #expect(pool.threadsStarted <= 10, "\(pool.threadsStarted) threads for 200 steps one after another")
    }

    /// Run in a task that blocks: more blocked bodies than the cooperative pool has
    /// threads, and a task started after them still runs, and releases them.
    @Test func blockingJobsLeaveTheCooperativePoolFree() async {
        let pool = WorkPool(computingThreads: 1)
        let released = DispatchSemaphore(value: 0)
        let bodies = ProcessInfo.processInfo.activeProcessorCount + 2
        let started = Locked(0)
        let timedOut = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<bodies {
                group.addTask {
                    await pool.run {
                        started.withLock { $0 += 1 }
                        if released.wait(timeout: .now() + 20) == .timedOut { timedOut.withLock { $0 += 1 } }
                    }
                }
            }
            group.addTask {
                // Runs only if the blocked bodies left the pool a thread: it waits until
                // every one of them is blocked, then releases them.
                while started.value < bodies { await Task.yield() }
                for _ in 0..<bodies { released.signal() }
            }
        }
        #expect(timedOut.value == 0 && started.value == bodies)
        #expect(pool.mostThreads == bodies)
    }

    /// Once closed, parked threads end, and so do those that finish their job; a job
    /// submitted after that still runs, on a thread that ends with it.
    @Test func aClosedPoolEndsItsThreadsAndStillRunsWhatComes() {
        let pool = WorkPool(computingThreads: 2)
        let done = DispatchGroup()
        for kind in [WorkPool.Kind.computing, .computing, .blocking, .blocking] {
            done.enter()
            pool.submit(kind) { done.leave() }
        }
        done.wait()
        pool.close()
        pool.waitForThreadsToEnd()
        #expect(pool.threadCount == 0)
        done.enter()
        pool.submit(.computing) { done.leave() }
        done.wait()
        pool.waitForThreadsToEnd()
        #expect(pool.threadCount == 0)
    }

    /// Every value is handled once, in the order each producer added it, however
    /// many threads hand values over at once.
    @Test func aLaneHandlesEveryValueOnceInOrder() async {
        let handled = Locked<[Int]>([])
        let batches = Locked(0)
        let done = Locked<CheckedContinuation<Void, Never>?>(nil)
        let producers = 4
        let each = 2000
        let lane = WorkPool.Lane<Int>(on: WorkPool(computingThreads: 1)) { values in
            batches.withLock { $0 += 1 }
            let count = handled.withLock { list -> Int in
                list += values
                return list.count
            }
            if count == producers * each { done.withLock { $0?.resume() } }
        }
        await withCheckedContinuation { continuation in
            done.withLock { $0 = continuation }
            DispatchQueue.concurrentPerform(iterations: producers) { producer in
                for value in 0..<each { lane.add(producer * each + value) }
            }
        }
        let values = handled.value
        #expect(values.count == producers * each)
        #expect(Set(values).count == producers * each)
        for producer in 0..<producers {
            let mine = values.filter { $0 / each == producer }
            #expect(mine == mine.sorted())
        }
        #expect(batches.value < producers * each, "values added while a batch ran wait for the next one")
    }

    /// `wait` returns only once every value handed over before it was handled, batches
    /// under way and those they left behind alike.
    @Test func aLanesWaitReturnsOnceEveryValueHandedOverIsHandled() {
        let gate = DispatchSemaphore(value: 0)
        let handled = Locked<[Int]>([])
        let lane = WorkPool.Lane<Int>(on: WorkPool(computingThreads: 1)) { values in
            if values.contains(0) { gate.wait() }
            handled.withLock { $0 += values }
        }
        lane.wait()
        lane.add(0)
        for value in 1...50 { lane.add(value) }
        gate.signal()
        lane.wait()
        #expect(handled.value == Array(0...50))
    }
}
