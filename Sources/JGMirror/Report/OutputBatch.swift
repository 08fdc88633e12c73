import Foundation

/// The outputs a run leaves for monitoring and CI (the JSON and JUnit reports, the
/// metrics, the last line of the events), written so that one failing never stops the
/// others and every one carries the exit code the process ends with, which counts the
/// outputs that could not be written (docs/safety.md#output-files).
///
/// Replaced files are all written under temporary names first, so that a failure is
/// known before any of them appears; the code then includes it, they are written again
/// with it, and only then renamed. A stream (stdout, a FIFO, a device, the events
/// stream) cannot be taken back: each is written once, after the files, the events'
/// last line after every other output, so that it carries what they came to; should
/// one fail, the files are written again with the new code. A stream waits for its
/// reader only as long as `patience` allows, and a signal while the batch is written
/// makes the code 130 (docs/safety.md#output-files).
public struct OutputBatch {
    /// One output: where it goes and how a report is rendered into it.
    public struct Output {
        public let target: OutputTarget
        /// What messages call it: "report", "JUnit report", "metrics", "events".
        public let name: String
        let render: (RunReport, (String) -> Void) -> Void
        /// A stream opened before the run (the events), which takes its last line here
        /// and is closed.
        let stream: OutputFile.Writer?

        public init(
            target: OutputTarget, name: String, stream: OutputFile.Writer? = nil,
            render: @escaping (RunReport, (String) -> Void) -> Void
        ) {
            self.target = target
            self.name = name
            self.stream = stream
            self.render = render
        }

        /// The JSON report (docs/reports.md#json-report).
        public static func report(_ target: OutputTarget) -> Output {
            Output(target: target, name: "report") { report, write in
                report.writeJSON(write)
                write("\n")
            }
        }

        /// The JUnit XML report.
        public static func junit(_ target: OutputTarget) -> Output {
            Output(target: target, name: "JUnit report") { report, write in JUnitReport.write(report, to: write) }
        }

        /// The Prometheus textfile metrics (docs/reports.md#metrics).
        public static func metrics(_ target: OutputTarget) -> Output {
            Output(target: target, name: "metrics") { report, write in write(RunMetrics.render(report)) }
        }

        /// The `run_finished` line of an events stream opened when the run started.
        public static func eventsEnd(_ stream: OutputFile.Writer, target: OutputTarget) -> Output {
            Output(target: target, name: "events", stream: stream) { report, write in write(EventLine.runFinished(report) + "\n")
            }
        }

        /// Events of a run that ended before its stream was opened: `run_finished` alone.
        public static func eventsEnd(_ target: OutputTarget) -> Output {
            Output(target: target, name: "events") { report, write in write(EventLine.runFinished(report) + "\n") }
        }

        /// Written under a temporary name and renamed, so it can be written again.
        var isReplaced: Bool {
            guard stream == nil, case .replaced = target.kind else { return false }
            return true
        }
    }

    /// What writing the batch came to.
    public struct Outcome: Sendable {
        /// The report's code, combined with `.local` when an output failed.
        public var exitCode: ExitCode
        /// One line per output that could not be written, naming it and its path.
        public var failures: [String]
    }

    public let outputs: [Output]
    /// How long each stream waits for its reader, and whether a signal came.
    let patience: OutputPatience

    public init(_ outputs: [Output], patience: OutputPatience = .standard) {
        self.outputs = outputs
        self.patience = patience
    }

    /// Writes every output for `report`, whose exit code is the run's so far.
    public func write(_ report: RunReport) -> Outcome {
        var writing = Writing(batch: self, report: report)
        while true {
            let start = writing.code
            if patience.isInterrupted { writing.code = ExitCode.combine([writing.code, .interrupted]) }
            writing.replaceFiles()
            // Files written with a code that no longer holds are written again.
            if writing.code != start { continue }
            guard writing.writeNextStream() else { break }
        }
        return Outcome(exitCode: writing.code, failures: writing.failures)
    }
}

extension OutputBatch {
    /// Where writing a batch stands: the code so far and what each output came to.
    private struct Writing {
        let batch: OutputBatch
        let report: RunReport
        var code: ExitCode
        var failures: [String] = []
        var failed = Set<Int>()
        /// The code each replaced file was renamed into place with.
        var carried: [Int: ExitCode] = [:]
        var streamed = Set<Int>()

        init(batch: OutputBatch, report: RunReport) {
            self.batch = batch
            self.report = report
            code = report.exitCode
        }

        mutating func fail(_ index: Int, _ reason: String) {
            failed.insert(index)
            let output = batch.outputs[index]
            failures.append("cannot write \(output.name) \(Rules.printable(output.target.given)): \(reason)")
            code = ExitCode.combine([code, .local])
        }

        func render(_ output: Output, into writer: OutputFile.Writer) throws(OutputFile.Failure) {
            var final = report
            final.exitCode = code
            output.render(final, writer.write)
            try writer.flush()
        }

        /// Writes every replaced file not yet carrying `code` under its temporary name,
        /// again while one failing changes the code, then renames them all into place.
        mutating func replaceFiles() {
            while true {
                let start = code
                var staged: [(Int, OutputFile.Writer)] = []
                for (index, output) in batch.outputs.enumerated()
                where output.isReplaced && !failed.contains(index) && carried[index] != code {
                    do {
                        let writer = try OutputFile.Writer(output.target.kind, patience: batch.patience)
                        staged.append((index, writer))
                        try render(output, into: writer)
                    } catch {
                        staged.removeAll { $0.0 == index }
                        fail(index, error.reason)
                    }
                }
                if code != start {
                    for (_, writer) in staged { writer.close() }
                    continue
                }
                for (index, writer) in staged {
                    do {
                        try writer.commit()
                        carried[index] = code
                    } catch { fail(index, error.reason) }
                    writer.close()
                }
                return
            }
        }

        /// Writes the next stream, a stream opened before the run (the events) last;
        /// false when none is left.
        mutating func writeNextStream() -> Bool {
            let outputs = batch.outputs
            let pending = outputs.indices.filter { !outputs[$0].isReplaced && !streamed.contains($0) && !failed.contains($0) }
            guard let index = pending.first(where: { outputs[$0].stream == nil }) ?? pending.first else { return false }
            streamed.insert(index)
            let output = outputs[index]
            do {
                let writer: OutputFile.Writer
                if let stream = output.stream {
                    writer = stream
                } else {
                    writer = try OutputFile.Writer(output.target.kind, patience: batch.patience)
                }
                defer { writer.close() }
                try render(output, into: writer)
            } catch { fail(index, error.reason) }
            return true
        }
    }
}
