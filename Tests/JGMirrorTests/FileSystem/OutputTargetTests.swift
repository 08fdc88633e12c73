import Foundation
import JGMirror
import TestServer
import Testing

/// Where `--report`, `--junit`, `--metrics`, `--events` and `report merge -o` write
/// (docs/safety.md#output-files), through the built binary: devices and FIFOs in place,
/// links kept, a path no output may take refused before the run, and every output
/// carrying the exit code the process ends with.
@Suite struct OutputTargetTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// One good item, mirrored into `dir/mirror`.
    func oneItemManifest(in dir: String) -> String {
        let body = TestServer.bytes(count: 40_000, seed: 31)
        server.set("/one", TestServer.Route(body: body))
        return write(manifest(url: server.url("/one"), sha256: sha(body), root: "mirror"), to: "m.yaml", in: dir)
    }

    func fileType(_ path: String) -> mode_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : nil
    }

    @Test func reportToAFIFOIsWrittenInPlace() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let fifo = try FIFOReader(path: dir + "/report.fifo")
            let run = try await execute(["sync", path, "--report", dir + "/report.fifo", "--progress", "none"])
            let text = fifo.finish()
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType(dir + "/report.fifo") == S_IFIFO)
            let report = try #require(
                try JSONSerialization.jsonObject(with: text) as? [String: Any], "read from the FIFO: \(text.count) bytes")
            #expect(report["exit_code"] as? Int == 0)
        }
    }

    @Test func eventsThroughASymlinkToAFIFOKeepTheLink() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let fifo = try FIFOReader(path: dir + "/events.fifo")
            try FileManager.default.createSymbolicLink(atPath: dir + "/events", withDestinationPath: "events.fifo")
            let run = try await execute(["sync", path, "--events", dir + "/events", "--progress", "none"])
            let text = String(decoding: fifo.finish(), as: UTF8.self)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType(dir + "/events") == S_IFLNK)
            #expect(fileType(dir + "/events.fifo") == S_IFIFO)
            let last = try #require(text.split(separator: "\n").last)
            let event = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(event["event"] as? String == "run_finished" && event["exit_code"] as? Int == 0)
        }
    }

    @Test func aSymlinkToARegularFileReplacesTheFileAndKeepsTheLink() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            write("old", to: "reports/today.json", in: dir)
            try FileManager.default.createSymbolicLink(atPath: dir + "/report.json", withDestinationPath: "reports/today.json")
            let run = try await execute(["sync", path, "--report", dir + "/report.json", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType(dir + "/report.json") == S_IFLNK)
            #expect(try loadReport(dir + "/reports/today.json")["exit_code"] as? Int == 0)
            // A link to a name not made yet, in a folder that exists: made there.
            try FileManager.default.createSymbolicLink(atPath: dir + "/junit.xml", withDestinationPath: "reports/junit.xml")
            let again = try await execute(["sync", path, "--junit", dir + "/junit.xml", "--progress", "none"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(fileType(dir + "/junit.xml") == S_IFLNK)
            #expect(fileType(dir + "/reports/junit.xml") == S_IFREG)
        }
    }

    @Test func aCharacterDeviceStaysOne() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            // A null device of the test's own (1, 3), so that a failure replaces nothing
            // the machine needs. Making one takes root; without it, /dev/null below.
            let device = dir + "/null"
            guard mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 else { return }
            let run = try await execute(["sync", path, "--report", device, "--junit", dir + "/j.xml", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType(device) == S_IFCHR)
        }
    }

    @Test func devNullStaysACharacterDevice() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let run = try await execute(["sync", path, "--report", "/dev/null", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType("/dev/null") == S_IFCHR)
        }
    }

    /// `/dev/stdout` is a link to `/proc/self/fd/1`; one of the test's own stands in for
    /// it, so that a failure replaces nothing the machine needs.
    @Test func aLinkToStdoutIsStdoutAndStaysALink() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            try FileManager.default.createSymbolicLink(atPath: dir + "/stdout", withDestinationPath: "/proc/self/fd/1")
            let run = try await execute(["sync", path, "--events", dir + "/stdout", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType(dir + "/stdout") == S_IFLNK)
            #expect(run.stdout.split(separator: "\n").last?.contains("\"run_finished\"") == true, "\(run.stdout)")
        }
    }

    @Test(arguments: [
        (["--report", "r.json", "--junit", "r.json"], "--junit"),
        (["--report", "r.json", "--metrics", "./link.json"], "--metrics"),
        (["--report", "-", "--events", "stdout"], "--events"),
        (["--report", "-", "--events", "-"], "--events"),
    ])
    func onePathForTwoOutputsIsRefusedBeforeTheRun(options: [String], named: String) async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            try FileManager.default.createSymbolicLink(atPath: dir + "/link.json", withDestinationPath: "r.json")
            // What /dev/stdout is.
            try FileManager.default.createSymbolicLink(atPath: dir + "/stdout", withDestinationPath: "/proc/self/fd/1")
            let run = try await execute(["sync", path, "--progress", "none"] + options, in: dir)
            #expect(run.status == 2)
            let lines = run.stderr.split(separator: "\n")
            #expect(
                lines.count == 1 && lines[0].contains(named) && lines[0].contains("give each output a path of its own"),
                "\(run.stderr)")
            #expect(server.requests().isEmpty)
            #expect(!exists(dir + "/r.json"))
        }
    }

    @Test func aFolderOrASocketOrALoopingLinkIsRefusedBeforeTheRun() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            try FileManager.default.createDirectory(atPath: dir + "/folder", withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: dir + "/loop", withDestinationPath: "loop")
            try FileManager.default.createSymbolicLink(atPath: dir + "/nowhere", withDestinationPath: "missing/file.json")
            let socket = try UnixSocket(path: dir + "/sock")
            defer { socket.closeSocket() }
            for (option, target, why) in [
                ("--report", "folder", "a folder"), ("--metrics", "sock", "a socket"),
                ("--junit", "loop", "a symbolic link that loops"), ("--events", "nowhere", "a symbolic link that leads nowhere"),
            ] {
                let run = try await execute(["sync", path, "--progress", "none", option, target], in: dir)
                #expect(run.status == 2, "\(option) \(target)")
                #expect(
                    run.stderr == "jgmirror: \(option) \(target): \(why)"
                        + "; give a regular file, a FIFO, a character device or '-'\n", "\(run.stderr)")
            }
            #expect(fileType(dir + "/folder") == S_IFDIR)
            #expect(fileType(dir + "/sock") == S_IFSOCK)
            #expect(server.requests().isEmpty)
            // `report merge -o` too, before any report is read.
            let merge = try await execute(["report", "merge", "no-such.json", "-o", "folder"], in: dir)
            #expect(merge.status == 2)
            #expect(merge.stderr.contains("-o folder: a folder"), "\(merge.stderr)")
        }
    }

    @Test func anUnwritableEventsFileLeavesTheOtherOutputsAllSayingExit4() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let run = try await execute([
                "sync", path, "--progress", "none", "--events", dir + "/missing/e.jsonl", "--report", dir + "/r.json",
                "--metrics", dir + "/m.prom", "--junit", dir + "/j.xml",
            ])
            #expect(run.status == 4)
            #expect(
                run.stderr.contains(
                    "cannot write events \(dir)/missing/e.jsonl: No such file or directory; the run goes on without them"))
            #expect(run.stderr.contains("exit 4"))
            let report = try loadReport(dir + "/r.json")
            #expect(report["exit_code"] as? Int == 4)
            #expect((report["totals"] as? [String: Any])?["downloaded"] as? Int == 1)
            #expect(exists(dir + "/mirror/out.bin"))
            #expect(try await prometheusSamples(dir + "/m.prom")["jgmirror_last_run_exit_code{manifest=\(path)}"] == 4)
            #expect(exists(dir + "/j.xml"))
        }
    }

    @Test func anUnwritableMetricsFileMakesTheReportAndEventsSayExit4() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let run = try await execute([
                "sync", path, "--progress", "none", "--metrics", dir + "/missing/m.prom", "--report", dir + "/r.json",
                "--events", dir + "/e.jsonl",
            ])
            #expect(run.status == 4)
            #expect(run.stderr.contains("cannot write metrics \(dir)/missing/m.prom: No such file or directory"))
            #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 4)
            let last = try #require(try String(contentsOfFile: dir + "/e.jsonl", encoding: .utf8).split(separator: "\n").last)
            let event = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(event["event"] as? String == "run_finished" && event["exit_code"] as? Int == 4)
            // No temporary file is left beside the outputs.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".tmp") }.isEmpty)
        }
    }

    /// A device that fails every write takes no file's place, so nothing can be written
    /// again; the events' last line, written after it, carries its failure.
    @Test func aReportOnDevFullMakesTheEventsAndMetricsSayExit4() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let run = try await execute([
                "sync", path, "--progress", "none", "--report", "/dev/full", "--events", dir + "/e.jsonl", "--metrics",
                dir + "/m.prom",
            ])
            #expect(run.status == 4)
            #expect(run.stderr.contains("cannot write report /dev/full: No space left on device"), "\(run.stderr)")
            #expect(try await prometheusSamples(dir + "/m.prom")["jgmirror_last_run_exit_code{manifest=\(path)}"] == 4)
            let last = try #require(try String(contentsOfFile: dir + "/e.jsonl", encoding: .utf8).split(separator: "\n").last)
            let event = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(event["event"] as? String == "run_finished" && event["exit_code"] as? Int == 4, "\(last)")
        }
    }

    @Test func aReportOnStdoutCarriesTheCodeOfAFailedJUnitFile() async throws {
        try await withTestDirectory { dir in
            let path = oneItemManifest(in: dir)
            let run = try await execute(["sync", path, "--progress", "none", "--report", "-", "--junit", dir + "/missing/j.xml"])
            #expect(run.status == 4)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(report["exit_code"] as? Int == 4)
        }
    }
}

/// The batch on its own: the code it returns and the one each output carries.
@Suite struct OutputBatchTests {
    @Test func aFailingOutputRaisesTheCodeOfTheOthers() throws {
        try withTestDirectorySync { dir in
            let report = RunReport(command: .sync, manifest: "m.yaml", started: Date(), finished: Date(), items: [])
            let good = try OutputTarget.resolve(dir + "/r.json", option: "--report")
            let bad = try OutputTarget.resolve(dir + "/missing/m.prom", option: "--metrics")
            let outcome = OutputBatch([.report(good), .metrics(bad)]).write(report)
            #expect(outcome.exitCode == .local)
            #expect(outcome.failures == ["cannot write metrics \(dir)/missing/m.prom: No such file or directory"])
            #expect(try RunReport.decode(Data(contentsOf: URL(fileURLWithPath: dir + "/r.json"))).exitCode == .local)
        }
    }
}

/// A FIFO made for a test and read to its end by a thread of its own. The test holds
/// a write end too, so the reader sees the end only once `finish()` lets go of it:
/// a program that never opens the FIFO (or renames a file over it) cannot leave the
/// reader waiting for ever.
final class FIFOReader: @unchecked Sendable {
    private let readEnd: Int32
    private let heldWriteEnd: Int32
    private let done = DispatchSemaphore(value: 0)
    // Written by the reading thread before `done` is signalled, read after the wait.
    private var data = Data()

    init(path: String) throws {
        guard mkfifo(path, 0o644) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // Non-blocking, as no writer is there yet; blocking again for the reads.
        readEnd = open(path, O_RDONLY | O_NONBLOCK)
        heldWriteEnd = open(path, O_WRONLY)
        guard readEnd >= 0, heldWriteEnd >= 0 else { throw POSIXError(.EIO) }
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) & ~O_NONBLOCK)
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(readEnd, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                data.append(contentsOf: buffer[0..<count])
            }
            done.signal()
        }.start()
    }

    /// Everything written to the FIFO, once every writer has closed it.
    func finish() -> Data {
        close(heldWriteEnd)
        done.wait()
        close(readEnd)
        return data
    }
}

/// A listening Unix socket at `path`, for an output that must refuse it.
struct UnixSocket {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard descriptor >= 0, bound == 0 else { throw POSIXError(.EIO) }
    }

    func closeSocket() { _ = close(descriptor) }
}
