import Dispatch
import Synchronization

/// `--max-duration`: when the run must stop, and whether it was stopped for it. One
/// per run, shared by the engine that fetches the lists and the session that fetches
/// the items, so the time spent on lists counts against the run. Items and lists
/// stopped by it say so (`interrupted`, or a failed list, with code `deadline`; exit 1
/// rather than 130: nobody interrupted the run, it ran out of the time it was given,
/// as a failed transfer does).
final class RunDeadline: Sendable {
    private struct State {
        /// Uptime nanoseconds at which the run stops, once fixed.
        var at: UInt64?
        var reached = false
    }

    private let state = Mutex(State())

    /// The run was stopped at its deadline.
    var reached: Bool { state.withLock { $0.reached } }

    func markReached() { state.withLock { $0.reached = true } }

    /// The deadline in uptime nanoseconds: `seconds` after the first call (the run's
    /// first list or, with none, its first item), the same on every later call until
    /// the run ends.
    func fix(after seconds: Double, now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> UInt64 {
        state.withLock { state in
            if let at = state.at { return at }
            // At most a century: the nanoseconds fit in 64 bits whatever a caller gives.
            let at = now &+ UInt64(min(max(0, seconds), 3.2e9) * 1e9)
            state = State(at: at)
            return at
        }
    }

    /// The run is over: the next run of the same options fixes a deadline of its own
    /// (`reached` still says how this one ended until then).
    func endRun() { state.withLock { $0.at = nil } }

    /// Marks the deadline reached and calls `stop` when it comes, or before returning
    /// when it has passed; cancel the returned work item to call it off.
    func schedule(at deadline: UInt64, _ stop: @escaping @Sendable () -> Void) -> DispatchWorkItem {
        let work = DispatchWorkItem { [self] in
            markReached()
            stop()
        }
        if deadline <= DispatchTime.now().uptimeNanoseconds {
            // Spent already (on the lists): stopped before anything more starts.
            work.perform()
        } else {
            DispatchQueue.global().asyncAfter(deadline: DispatchTime(uptimeNanoseconds: deadline), execute: work)
        }
        return work
    }
}
