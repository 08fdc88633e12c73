import Foundation
import JGMirror
import SystemPackage
import TestServer
import Testing

/// An output whose reader takes nothing (`--events - | sleep 60`, a FIFO opened and
/// never read): the run still ends, and SIGTERM still ends it with exit 130 and the
/// other outputs written (docs/safety.md#output-files), through the built binary.
@Suite struct StuckOutputTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// One good item, mirrored into `dir/mirror`.
    func oneItemManifest(in dir: String) -> String {
        let body = TestServer.bytes(count: 30_000, seed: 71)
        server.set("/one", TestServer.Route(body: body))
        return write(
            "version: 1\nroot: mirror\nitems:\n  - url: \(server.url("/one"))\n    dest: one.bin\n    sha256: \(sha(body))\n",
            to: "m.yaml", in: dir)
    }

    /// SIGTERM once the item is placed; the status, or nil when the process had not
    /// ended 30 s later (it is then killed).
    func terminateOncePlaced(_ process: Process, dir: String) async -> Int32? {
        let placed = await send(SIGTERM, to: process, within: 60) { exists(dir + "/mirror/one.bin") }
        #expect(placed)
        guard await waitFor(seconds: 30, process: process) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    @Test(arguments: ["--events", "--report", "--junit", "--metrics"])
    func aFIFONobodyReadsGivesWayToSIGTERM(option: String) async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let fifo = try StuckFIFO(path: dir + "/stuck")
            defer { fifo.close() }
            // The report, or the metrics when the report is the stuck one, tells the code.
            let witness = option == "--report" ? ["--metrics", dir + "/m.prom"] : ["--report", dir + "/r.json"]
            let (process, _, errors) = try launch(["sync", path, "--progress", "none", option, fifo.path] + witness)
            let status = await terminateOncePlaced(process, dir: dir)
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(status == 130, "\(stderr)")
            #expect(stderr.contains("interrupted while its reader took nothing"), "\(stderr)")
            if option == "--report" {
                #expect(try await prometheusSamples(dir + "/m.prom")["jgmirror_last_run_exit_code{manifest=\(path)}"] == 130)
            } else {
                #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 130)
            }
        }
    }

    @Test func eventsOnAStdoutNobodyReadsGiveWayToSIGTERM() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            // `| sleep 60`: a pipe whose reader is there and reads nothing, already full.
            let pipe = try FileDescriptor.pipe()
            defer { try? pipe.readEnd.close() }
            fill(pipe.writeEnd.rawValue)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: jgmirrorBinary)
            process.arguments = ["sync", path, "--progress", "none", "--events", "-", "--report", dir + "/r.json"]
            process.standardOutput = FileHandle(fileDescriptor: pipe.writeEnd.rawValue, closeOnDealloc: false)
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            try pipe.writeEnd.close()
            let status = await terminateOncePlaced(process, dir: dir)
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(status == 130, "\(stderr)")
            #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 130)
        }
    }
}

/// A stream output on its own, its waits cut short: a reader that takes nothing ends
/// the write with the reason, never a hang.
@Suite struct StuckStreamTests {
    @Test func aFIFONobodyReadsFailsTheWriteOnceItsReaderStalls() throws {
        try withTestDirectorySync { dir in
            let fifo = try StuckFIFO(path: dir + "/stuck")
            defer { fifo.close() }
            let patience = OutputPatience(stall: .milliseconds(200))
            let writer = try OutputFile.Writer(.inPlace(path: fifo.path), patience: patience)
            writer.write("{}\n")
            #expect(throws: OutputFile.Failure.self) { try writer.flush() }
            #expect(writer.failureReason == "its reader took nothing for 200ms")
            writer.close()
        }
    }

    @Test func aFIFONobodyOpensFailsTheOpenOnceItsReaderStalls() {
        withTestDirectorySync { dir in
            #expect(mkfifo(dir + "/lonely", 0o644) == 0)
            let patience = OutputPatience(stall: .milliseconds(200))
            #expect {
                _ = try OutputFile.Writer(.inPlace(path: dir + "/lonely"), patience: patience)
            } throws: { ($0 as? OutputFile.Failure)?.reason == "no reader opened it for 200ms" }
        }
    }

    @Test func anInterruptEndsAWaitThatHasNoStallLimitInSight() throws {
        try withTestDirectorySync { dir in
            let fifo = try StuckFIFO(path: dir + "/stuck")
            defer { fifo.close() }
            let patience = OutputPatience(stall: .seconds(86_400), grace: .zero)
            patience.interrupt()
            let writer = try OutputFile.Writer(.inPlace(path: fifo.path), patience: patience)
            writer.write("{}\n")
            #expect(writer.failureReason == "interrupted while its reader took nothing")
            writer.close()
        }
    }
}

/// The wait's decision in virtual time.
@Suite struct OutputPatienceTests {
    let start = ContinuousClock.now

    func verdict(idle: Double, signalledAt: Double?, now: Double) -> OutputPatience.Verdict {
        OutputPatience.verdict(
            since: start + .seconds(idle), interruptedAt: signalledAt.map { start + .seconds($0) }, now: start + .seconds(now),
            stall: .seconds(30), grace: .milliseconds(500))
    }

    @Test func aReaderGetsTheStallLimitFromItsLastByte() {
        #expect(verdict(idle: 0, signalledAt: nil, now: 10) == .wait(.seconds(20)))
        #expect(verdict(idle: 5, signalledAt: nil, now: 34) == .wait(.seconds(1)))
        #expect(verdict(idle: 5, signalledAt: nil, now: 35) == .stalled)
    }

    @Test func aSignalLeavesOnlyTheGrace() {
        #expect(verdict(idle: 0, signalledAt: 10, now: 10) == .wait(.milliseconds(500)))
        #expect(verdict(idle: 0, signalledAt: 10, now: 10.5) == .interrupted)
        // Long after the signal, a stream that had not waited yet gives up at once.
        #expect(verdict(idle: 20, signalledAt: 10, now: 20) == .interrupted)
        // A stall limit that ends first still ends the wait.
        #expect(verdict(idle: 0, signalledAt: 29.9, now: 30) == .stalled)
    }
}

/// A FIFO with a reader that is there and reads nothing, its buffer already full: any
/// write to it waits.
final class StuckFIFO: Sendable {
    let path: String
    private let readEnd: Int32

    init(path: String) throws {
        guard mkfifo(path, 0o644) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        self.path = path
        readEnd = open(path, O_RDONLY | O_NONBLOCK)
        let writeEnd = open(path, O_WRONLY)
        guard readEnd >= 0, writeEnd >= 0 else { throw POSIXError(.EIO) }
        fill(writeEnd)
        Glibc.close(writeEnd)
    }

    func close() { Glibc.close(readEnd) }
}

/// Fills the pipe or FIFO `fd` writes to, exactly to its capacity, so no write blocks.
func fill(_ fd: Int32) {
    // 1032: F_GETPIPE_SZ, which the Glibc module leaves out.
    let capacity = Int(fcntl(fd, 1032))
    let bytes = [UInt8](repeating: 0x78, count: max(capacity, 0))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
