import Foundation

/// Work that can block for seconds — walking a tree, the state database, an `fsync`
/// behind a busy disk — runs on a thread of its own, never on Swift's cooperative
/// pool. That pool has one thread per core and every task of the process shares it:
/// a run that blocked it would stall the library user's other tasks (and, in one
/// process, the other runs) for as long as the disk is slow.
enum Blocking {
    /// Runs `body` on a new thread and suspends the caller until it returns.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}
