import Foundation

extension SyncSession {
    /// Runs the session as a command does: its events go to `outputs` (the `--events`
    /// stream) and to `progress`, and SIGINT or SIGTERM cancel it, keeping resume
    /// state (or clearing it when `clearOnSignal`, `--no-resume`) after `notice` is told
    /// why. From here until `outputs` are finished, a signal also cuts short any wait
    /// for a reader of an output (docs/safety.md#output-files). An interrupted run's
    /// report exits 130; one stopped at `--max-duration` keeps its own code.
    public func runHandlingSignals(
        progress: ProgressRenderer, clearOnSignal: Bool, outputs: RunOutputs? = nil,
        notice: @escaping @Sendable (String) -> Void
    ) async throws(SyncError) -> RunReport {
        outputs?.watchSignals()
        let watch = SignalWatch.shared.watch { [self] _ in
            notice("jgmirror: interrupted; stopping transfers and saving resume state")
            cancel(clearingState: clearOnSignal)
        }
        defer { watch.end() }
        // One stream has one reader: it writes each event line, then shows the event.
        // (A second stream to the display cost a thread wake-up per event: 30 ms of a
        // 2000-file sync.)
        let reading = Task {
            for await event in events {
                outputs?.write(event)
                progress.show(event)
            }
            progress.finish()
        }
        let result: Result<RunReport, SyncError>
        do { result = .success(try await run()) } catch { result = .failure(error) }
        await reading.value
        var report = try result.get()
        progress.reportProblems(in: report)
        if isCancelled, !reachedDeadline { report.exitCode = ExitCode.combine([report.exitCode, .interrupted]) }
        return report
    }
}
