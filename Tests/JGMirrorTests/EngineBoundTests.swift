import Foundation
import Synchronization
import Testing

@testable import JGMirror

/// `EngineBound`: what the engine thread owns is touched there, and touching it from
/// anywhere else traps in debug builds.
@Suite struct EngineBoundTests {
    /// What `body` returns on a thread of its own, run while the caller's thread waits
    /// (so the two are distinct live threads).
    private func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            result.withLock { $0 = body() }
            done.signal()
        }.start()
        done.wait()
        return result.withLock { $0! }
    }

    @Test func onlyTheThreadThatEnteredIsTheEngineThread() {
        let engine = EngineThread()
        #expect(!engine.isCurrent, "no thread is before the loop starts")
        engine.enter()
        #expect(engine.isCurrent)
        var bound = EngineBound(1, on: engine)
        bound.value += 41
        #expect(bound.value == 42)
        #expect(!onAnotherThread { engine.isCurrent })
    }

    @Test(.enabled(if: _isDebugAssertConfiguration()))
    func touchingEngineBoundStateOffTheEngineThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let engine = EngineThread()
            let bound = EngineBound([1, 2, 3], on: engine)
            _ = bound.value
        }
        // An item's connections belong to its engine's thread, not the caller's.
        await #expect(processExitsWith: .failure) {
            let engine = try TransferEngine(configuration: TransferEngine.Configuration()) { _ in }
            let request = TransferRequest(
                id: 7, sources: ["http://127.0.0.1:1/bound"], root: try RootDirectory(path: "/"),
                partPath: "/nonexistent/bound.jgpart", statePath: "/nonexistent/bound.jgd", expectedSize: 1 << 20,
                connections: 2, retries: 1, minSegment: 1 << 16, timeout: 5, headers: [], insecure: false, resume: false)
            let item = ItemTransfer(engine: engine, request: request) { _ in }
            _ = item.crew.workers
        }
        // So do the engine's own queues, hosts and budget.
        await #expect(processExitsWith: .failure) {
            let engine = try TransferEngine(configuration: TransferEngine.Configuration()) { _ in }
            _ = engine.loop.running.count
        }
    }

    @Test func aMemberIsChangedInPlaceThroughTheWrapper() {
        let engine = EngineThread()
        engine.enter()
        struct Owned {
            var list = [1, 2]
            var count = 0
        }
        var bound = EngineBound(Owned(), on: engine)
        bound.list.append(3)
        bound.count += 1
        #expect(bound.value.list == [1, 2, 3] && bound.count == 1)
    }
}
