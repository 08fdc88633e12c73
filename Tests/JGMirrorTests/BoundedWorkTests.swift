import Foundation
import Testing

@testable import JGMirror

/// The window that bounds the hashing a walk of the plan queues.
struct BoundedWorkTests {
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
        let work = BoundedWork(threads: threads, limit: limit, onFull: open)
        let done = DispatchGroup()
        let ran = Locked(0)
        for _ in 0..<200 {
            done.enter()
            work.submit {
                gate.wait()
                gate.signal()
                ran.withLock { $0 += 1 }
                done.leave()
            }
        }
        open()
        done.wait()
        #expect(ran.value == 200)
        #expect(work.mostInFlight == limit)
    }

    @Test func workSubmittedWithoutWaitingRunsOutsideTheWindow() {
        let work = BoundedWork(threads: 2, limit: 1)
        let done = DispatchGroup()
        for _ in 0..<10 {
            done.enter()
            work.submitWithoutWaiting { done.leave() }
        }
        done.wait()
        #expect(work.mostInFlight == 0)
    }
}
