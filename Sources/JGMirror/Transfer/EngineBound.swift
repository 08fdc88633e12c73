import Glibc
import Synchronization

/// The thread an engine's loop runs on, as other code can ask about it: set once the
/// loop starts (`enter`), compared with the calling thread (`isCurrent`).
final class EngineThread: Sendable {
    /// The loop's `pthread_t`; 0 until it entered.
    private let id = Atomic<UInt>(0)

    init() {}

    /// The calling thread is the engine thread from now on.
    func enter() { id.store(UInt(pthread_self()), ordering: .releasing) }

    /// The calling thread is the engine thread. Before the loop entered, no thread is:
    /// the engine's state is set up in its initializer, which touches no
    /// `EngineBound` through its accessors.
    var isCurrent: Bool {
        let owner = id.load(ordering: .acquiring)
        return owner != 0 && pthread_equal(pthread_t(owner), pthread_self()) != 0
    }
}

/// A value only the engine thread may touch, in the style of swift-nio's `NIOLoopBound`:
/// every access checks, in debug builds, that it comes from the engine thread, and
/// traps when it does not. Release builds do not check.
///
/// Held three ways: as a value (`engine.loop`, read member by member as `loop.running`);
/// as a property wrapper on each field of a class with few of them (`@EngineBound var
/// tally` in `ItemTransfer`, set in its initializer as `_tally = EngineBound(…, on:)`);
/// or as one struct of a class's fields that the class forwards by dynamic member
/// lookup (`Worker`).
///
/// `@unchecked Sendable`: the value moves between threads only inside this wrapper,
/// whose every access is checked (`EngineThread.isCurrent`).
@dynamicMemberLookup
@propertyWrapper
struct EngineBound<Value>: @unchecked Sendable {
    private var stored: Value
    let thread: EngineThread

    init(_ value: Value, on thread: EngineThread) {
        stored = value
        self.thread = thread
    }

    /// The value; touching it off the engine thread traps in debug builds.
    var value: Value {
        get {
            check()
            return stored
        }
        _modify {
            check()
            yield &stored
        }
    }

    /// The value without the check, for a deinitializer only: whoever runs it holds
    /// the last reference to the owner, so no other thread can reach the value.
    var unchecked: Value {
        get { stored }
        _modify { yield &stored }
    }

    /// The value as a property wrapper's (`@EngineBound var tally`), checked as `value` is.
    var wrappedValue: Value {
        @inline(__always) get {
            check()
            return stored
        }
        @inline(__always) _modify {
            check()
            yield &stored
        }
    }

    /// One member of the value (`loop.running`), checked as `value` is, changed in place.
    /// Always inlined: at the call site the key path is a literal, which the optimizer
    /// turns into a direct access (out of line, each access projects it at run time).
    /// A change through an optional chain (`loop.limiter?.take(n)`) is not inlined:
    /// write those through `value` (`loop.value.limiter?.take(n)`).
    subscript<Member>(dynamicMember path: WritableKeyPath<Value, Member>) -> Member {
        @inline(__always) get {
            check()
            return stored[keyPath: path]
        }
        @inline(__always) _modify {
            check()
            yield &stored[keyPath: path]
        }
    }

    @inline(__always)
    private func check() {
        assert(thread.isCurrent, "engine-bound state touched off the engine thread")
    }
}
