import Foundation
import Synchronization

/// How long a stream output (stdout, a FIFO, a character device) waits for its reader
/// (docs/safety.md#output-files). A reader that takes nothing for `stall` has stopped
/// reading (`--events - | sleep 60`, a FIFO opened and never read): the output fails,
/// the run ends without it and exits 4. After SIGINT or SIGTERM (`interrupt()`) every
/// wait ends within `grace` of the signal, so a stuck reader never keeps a signal from
/// ending the process.
///
/// The waits are poll(2) on the stream and on a pipe of its own that `interrupt()`
/// writes to, so a signal wakes a wait at once; what to do next is `verdict`, a pure
/// function of the times involved.
public final class OutputPatience: Sendable {
    /// A reader that takes no byte for this long has stopped reading: as long as the
    /// stall timeout of a transfer (`Rules.timeout`), past any pause of a reader that
    /// is still there (a log shipper rotating its file, a pager).
    public static let stallLimit: Duration = .seconds(30)
    /// What a stream may still wait once a signal came: a reader that is reading takes
    /// the report in that time, and the process ends well within the 2 s a signal is
    /// promised.
    public static let graceAfterSignal: Duration = .milliseconds(500)

    /// The patience of outputs no signal interrupts: a library caller's, `OutputFile.write`'s.
    public static let standard = OutputPatience()

    let stall: Duration
    let grace: Duration
    /// When `interrupt()` was first called.
    private let interruptedAt = Mutex<ContinuousClock.Instant?>(nil)
    /// Read and write ends of the pipe `interrupt()` writes one byte to; never read, so
    /// once written it stays readable.
    private let wake: (read: Int32, write: Int32)

    public init(stall: Duration = stallLimit, grace: Duration = graceAfterSignal) {
        self.stall = stall
        self.grace = grace
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        }
        wake = (ends[0], ends[1])
    }

    deinit {
        for end in [wake.read, wake.write] where end >= 0 { close(end) }
    }

    /// A signal came: every wait, now and later, ends within `grace` of now. Safe from
    /// any thread; takes no lock an output holds while it writes.
    public func interrupt() {
        let first = interruptedAt.withLock { at in
            defer { at = at ?? .now }
            return at == nil
        }
        if first, wake.write >= 0 {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
    }

    /// Whether `interrupt()` was called.
    public var isInterrupted: Bool { interruptedAt.withLock { $0 != nil } }

    /// What a wait for a reader that has taken nothing since `since` does at `now`.
    public enum Verdict: Equatable, Sendable {
        /// Wait at most this long more.
        case wait(Duration)
        /// The reader took nothing for the whole stall limit.
        case stalled
        /// A signal came more than the grace ago.
        case interrupted
    }

    /// The decision behind every wait, in virtual time: a stall limit counted from the
    /// last byte the reader took, cut short to `grace` after a signal.
    public static func verdict(
        since: ContinuousClock.Instant, interruptedAt: ContinuousClock.Instant?, now: ContinuousClock.Instant,
        stall: Duration, grace: Duration
    ) -> Verdict {
        let stalledAt = since + stall
        if let interruptedAt, interruptedAt + grace < stalledAt {
            let end = interruptedAt + grace
            return now >= end ? .interrupted : .wait(end - now)
        }
        return now >= stalledAt ? .stalled : .wait(stalledAt - now)
    }

    /// This output's `verdict` now.
    func verdict(since: ContinuousClock.Instant) -> Verdict {
        Self.verdict(
            since: since, interruptedAt: interruptedAt.withLock { $0 }, now: .now, stall: stall, grace: grace)
    }

    /// Waits until `descriptor` takes bytes; nil then, else why it gave up (the reader
    /// has taken nothing since `since`).
    func waitUntilWritable(_ descriptor: Int32, since: ContinuousClock.Instant) -> String? {
        while true {
            let left: Duration
            switch verdict(since: since) {
            case .stalled: return "its reader took nothing for \(Rules.formatDuration(Self.seconds(stall)))"
            case .interrupted: return "interrupted while its reader took nothing"
            case .wait(let duration): left = duration
            }
            var polled = [pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)]
            // Once interrupted the wake pipe stays readable: left out, or poll would spin.
            if !isInterrupted, wake.read >= 0 { polled.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&polled, nfds_t(polled.count), Self.milliseconds(left))
            if ready < 0, errno != EINTR { return String(cString: strerror(errno)) }
            // Writable, or an error or hang-up the write itself reports (EPIPE).
            if ready > 0, polled[0].revents != 0 { return nil }
        }
    }

    /// Waits a little before a FIFO that has no reader yet is opened again, or gives up
    /// (`since`: when the first attempt found none).
    func pauseForReader(since: ContinuousClock.Instant) -> String? {
        let left: Duration
        switch verdict(since: since) {
        case .stalled: return "no reader opened it for \(Rules.formatDuration(Self.seconds(stall)))"
        case .interrupted: return "interrupted while no reader had opened it"
        case .wait(let duration): left = duration
        }
        // No event tells that a reader came: look again every 50 ms, at once on a signal.
        var polled = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        _ = poll(&polled, isInterrupted ? 0 : 1, Self.milliseconds(min(left, .milliseconds(50))))
        return nil
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `duration` in whole milliseconds for poll(2), rounded up, at least 1.
    private static func milliseconds(_ duration: Duration) -> Int32 {
        Int32(min(max((seconds(duration) * 1000).rounded(.up), 1), Double(Int32.max)))
    }
}
