import Foundation

/// Whether `condition` comes to hold within `seconds`, looked at every 20 ms: for what
/// no event announces, such as a file a child process writes. The suite's one wait
/// driven by a clock; its limits are generous, so that a loaded machine makes a test
/// slower, not red. Blocks the calling thread.
private func poll(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return true
}

/// `poll` on a thread of its own, leaving the cooperative thread pool free (a 2-core
/// machine has two threads in it).
func waitFor(seconds: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    await withCheckedContinuation { done in
        Thread { done.resume(returning: poll(seconds: seconds, condition)) }.start()
    }
}

/// Sends `signal` to `process` as soon as `condition` holds, from a thread of its own:
/// on a loaded machine a test waiting on the cooperative pool can resume seconds late,
/// after the throttled download it meant to interrupt has finished. Returns whether
/// the condition held within `seconds` (no signal if not).
func send(
    _ signal: Int32, to process: Process, within seconds: Double,
    when condition: @escaping @Sendable () -> Bool
) async -> Bool {
    let pid = process.processIdentifier
    return await withCheckedContinuation { done in
        Thread {
            let met = poll(seconds: seconds, condition)
            if met { kill(pid, signal) }
            done.resume(returning: met)
        }.start()
    }
}

/// Whether `process` ends within `seconds`: woken by its end, not by a clock.
func waitFor(seconds: Double, process: Process) async -> Bool {
    await withCheckedContinuation { done in
        Thread {
            let ended = DispatchSemaphore(value: 0)
            Thread {
                process.waitUntilExit()
                ended.signal()
            }.start()
            done.resume(returning: ended.wait(timeout: .now() + seconds) == .success)
        }.start()
    }
}
