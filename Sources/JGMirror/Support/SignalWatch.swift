import Dispatch
import Foundation
import Synchronization

/// SIGINT and SIGTERM, handed to whoever watches them (docs/sync.md#interruption): a
/// running sync, which stops its transfers, and the run's outputs, which stop waiting
/// for a reader, so that a signal ends the process however far the run got.
///
/// The first watch ignores both signals' default action (ending the process at once,
/// with no report and no saved state) and keeps them so for the rest of the process;
/// a signal that comes while nobody watches is dropped, as it was once a run's own
/// handlers had been cancelled.
public final class SignalWatch: Sendable {
    /// The process's one watch: a signal has one disposition per process.
    public static let shared = SignalWatch()

    /// One `watch`'s registration; `end()` stops its handler being called.
    public struct Watch: Sendable {
        fileprivate let id: Int
        fileprivate let owner: SignalWatch

        public func end() { owner.state.withLock { _ = $0.handlers.removeValue(forKey: id) } }
    }

    private struct State {
        var handlers: [Int: @Sendable (Int32) -> Void] = [:]
        var nextID = 0
        var installed = false
    }

    private let state = Mutex(State())
    /// The dispatch sources, kept for the life of the process once made. Written once,
    /// by the one `watch` that found `installed` false, and never read.
    nonisolated(unsafe) private var sources: [DispatchSourceSignal] = []

    private init() {}

    /// Calls `handler` with the signal's number on every SIGINT or SIGTERM until the
    /// returned watch ends, on a thread of Dispatch's; it must not wait for long.
    public func watch(_ handler: @escaping @Sendable (Int32) -> Void) -> Watch {
        let (id, install) = state.withLock { state in
            defer {
                state.nextID += 1
                state.installed = true
            }
            state.handlers[state.nextID] = handler
            return (state.nextID, !state.installed)
        }
        if install { installSources() }
        return Watch(id: id, owner: self)
    }

    private func installSources() {
        var made: [DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [self] in
                let handlers = state.withLock { Array($0.handlers.sorted { $0.key < $1.key }.map(\.value)) }
                for handler in handlers { handler(signalNumber) }
            }
            source.resume()
            made.append(source)
        }
        sources = made
    }
}
