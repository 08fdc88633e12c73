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

    /// An item of an engine whose loop does not run, with one worker hired: the calling
    /// thread plays the engine thread. For the exit tests, which capture nothing.
    fileprivate static func itemWithAWorker() throws -> (TransferEngine, ItemTransfer, Worker) {
        var configuration = TransferEngine.Configuration()
        configuration.startsLoop = false
        let engine = try TransferEngine(configuration: configuration) { _ in }
        engine.engineThread.enter()
        let request = TransferRequest(
            id: 3, sources: ["http://127.0.0.1:1/bound"], root: try RootDirectory(path: "/"),
            partPath: "/nonexistent/bound.jgpart", statePath: "/nonexistent/bound.jgd", expectedSize: 1 << 20,
            connections: 2, retries: 1, minSegment: 1 << 16, timeout: 5, headers: [], insecure: false, resume: false)
        let item = ItemTransfer(engine: engine, request: request) { _ in }
        return (engine, item, item.crew.hire())
    }

    /// Runs `body` on a thread of its own and waits for it (in an exit test's process).
    fileprivate static func elsewhere(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        done.wait()
    }

    /// What the engine thread owns beyond its loop and crews: each worker's fields, the
    /// item's own (its tally, what it knows of the remote file, its pending decisions)
    /// and its storage's, each checked on every access. Touched on the engine thread
    /// they work; from any other thread they trap.
    @Test(.enabled(if: _isDebugAssertConfiguration()))
    func touchingAnItemsStateOffTheEngineThreadTraps() async throws {
        let (engine, item, worker) = try Self.itemWithAWorker()
        worker.pos += 10
        item.tally.attempts += 1
        #expect(worker.pos == 10 && item.tally.attempts == 2 && item.storage.bytesThisRun == 0 && !item.finished)
        withExtendedLifetime(engine) {}
        await #expect(processExitsWith: .failure) {
            let (engine, _, worker) = try EngineBoundTests.itemWithAWorker()
            nonisolated(unsafe) let shared = worker
            EngineBoundTests.elsewhere { shared.pos += 1 }
            withExtendedLifetime(engine) {}
        }
        await #expect(processExitsWith: .failure) {
            let (engine, item, _) = try EngineBoundTests.itemWithAWorker()
            EngineBoundTests.elsewhere { _ = item.tally.attempts }
            withExtendedLifetime(engine) {}
        }
        await #expect(processExitsWith: .failure) {
            let (engine, item, _) = try EngineBoundTests.itemWithAWorker()
            EngineBoundTests.elsewhere { _ = item.remote.validators }
            withExtendedLifetime(engine) {}
        }
        await #expect(processExitsWith: .failure) {
            let (engine, item, _) = try EngineBoundTests.itemWithAWorker()
            EngineBoundTests.elsewhere { _ = item.storage.bytesThisRun }
            withExtendedLifetime(engine) {}
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
