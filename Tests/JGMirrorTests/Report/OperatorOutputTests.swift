import Foundation
import JGMirror
import TestServer
import Testing

/// `--events` and `--metrics` (docs/reports.md#events, docs/reports.md#metrics), through the built
/// binary.
@Suite struct OperatorOutputTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// Two good items and one 404, so the run exits 1; mirrored into `dir/mirror`.
    func threeItemManifest(in dir: String) -> String {
        var lines = ["version: 1", "root: mirror", "items:"]
        for index in 0..<2 {
            let body = TestServer.bytes(count: 300_000 + index, seed: UInt64(900 + index))
            server.set("/e\(index)", TestServer.Route(body: body))
            lines += [
                "  - url: \(server.url("/e\(index)"))", "    dest: e\(index).bin", "    sha256: \(sha(body))",
                "    connections: 2",
            ]
        }
        lines += ["  - url: \(server.url("/gone"))", "    dest: gone.bin", "    tag: 7"]
        return write(lines.joined(separator: "\n") + "\n", to: "m.yaml", in: dir)
    }

    /// Each line parsed as one JSON object.
    func events(_ text: String) throws -> [[String: Any]] {
        #expect(text.hasSuffix("\n"))
        return try text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not an object: \(line)")
        }
    }

    @Test func eventsOnStdoutAreJSONLinesEndingWithRunFinished() async throws {
        try await withTestDirectory { dir in
            let path = threeItemManifest(in: dir)
            let run = try await execute(["sync", path, "--events", "-", "--report", dir + "/r.json", "--progress", "lines"])
            #expect(run.status == 1)
            let lines = try events(run.stdout)
            let finished = lines.filter { $0["event"] as? String == "item_finished" }
            #expect(finished.count == 3)
            #expect(
                Set(finished.compactMap { ($0["item"] as? [String: Any])?["dest"] as? String }) == [
                    "e0.bin", "e1.bin", "gone.bin",
                ])
            #expect(lines.filter { $0["event"] as? String == "item_started" }.count == 2)
            for line in lines { #expect((line["time"] as? String)?.hasSuffix("Z") == true) }
            // The item objects are the report's, field for field.
            let report = try loadReport(dir + "/r.json")
            let reportItems = try #require(report["items"] as? [[String: Any]])
            for item in reportItems {
                let event = try #require(
                    finished.first { ($0["item"] as? [String: Any])?["dest"] as? String == item["dest"] as? String })
                #expect(NSDictionary(dictionary: try #require(event["item"] as? [String: Any])).isEqual(to: item))
            }
            let last = try #require(lines.last)
            #expect(last["event"] as? String == "run_finished")
            #expect(last["exit_code"] as? Int == 1)
            let totals = try #require(last["totals"] as? [String: Any])
            #expect(totals["downloaded"] as? Int == 2 && totals["failed"] as? Int == 1)
            #expect(lines.filter { $0["event"] as? String == "run_finished" }.count == 1)
            // Human output stays on stderr.
            #expect(run.stderr.contains("failed      gone.bin"))
            #expect(!run.stdout.contains("failed      gone.bin"))
        }
    }

    @Test func progressEventsAreThrottledPerItem() async throws {
        let body = TestServer.bytes(count: 1 << 20, seed: 950)
        var route = TestServer.Route(body: body)
        route.bytesPerSecond = 512 << 10
        server.set("/slow", route)
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nroot: mirror\nitems:\n  - url: \(server.url("/slow"))\n    dest: slow.bin\n    connections: 1\n    sha256: \(sha(body))\n",
                to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--events", dir + "/events.jsonl", "--progress", "none"])
            #expect(run.status == 0)
            let lines = try events(
                String(decoding: try Data(contentsOf: URL(fileURLWithPath: dir + "/events.jsonl")), as: UTF8.self))
            let progress = lines.filter { $0["event"] as? String == "item_progress" }
            #expect(!progress.isEmpty)
            // `expected` is null until the first response tells the length.
            #expect(
                progress.allSatisfy {
                    $0["dest"] as? String == "slow.bin" && ($0["expected"] is NSNull || $0["expected"] as? Int == 1 << 20)
                })
            #expect(progress.contains { $0["expected"] as? Int == 1 << 20 })
            // At most five a second (one per 0.2 s) over the whole run, whatever its length.
            let last = try #require(lines.last)
            #expect(last["event"] as? String == "run_finished")
            let seconds = try #require(last["duration_s"] as? Double)
            #expect(Double(progress.count) <= seconds * 5 + 2)
        }
    }

    @Test func eventsAndReportCannotBothTakeStdout() async throws {
        try await withTestDirectory { dir in
            let path = threeItemManifest(in: dir)
            let run = try await execute(["sync", path, "--events", "-", "--report", "-"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("cannot share stdout"))
            #expect(server.requests().isEmpty)
        }
    }

    @Test func metricsParseWithPrometheusClientAndEqualTheReport() async throws {
        try await withTestDirectory { dir in
            let path = threeItemManifest(in: dir)
            let run = try await execute(["sync", path, "--metrics", dir + "/jgmirror.prom", "--report", dir + "/r.json"])
            #expect(run.status == 1)
            let samples = try await prometheusSamples(dir + "/jgmirror.prom")
            let report = try loadReport(dir + "/r.json")
            let totals = try #require(report["totals"] as? [String: Any])
            let label = "manifest=\(path)"
            #expect(samples["jgmirror_last_run_exit_code{\(label)}"] == 1)
            #expect(samples["jgmirror_last_run_bytes_downloaded{\(label)}"] == Double(totals["bytes_downloaded"] as? Int ?? -1))
            #expect(samples["jgmirror_last_run_bytes_verified{\(label)}"] == 600_001)
            #expect(samples["jgmirror_items{\(label),status=downloaded}"] == 2)
            #expect(samples["jgmirror_items{\(label),status=failed}"] == 1)
            for status in ItemStatus.allCases where ![.downloaded, .failed].contains(status) {
                #expect(samples["jgmirror_items{\(label),status=\(status.rawValue)}"] == 0, "\(status)")
            }
            let duration = try #require(samples["jgmirror_last_run_duration_seconds{\(label)}"])
            #expect(abs(duration - (report["duration_s"] as? Double ?? -1)) < 0.01)
            let finished = try #require(report["finished"] as? String)
            let stamp = try #require(samples["jgmirror_last_run_timestamp_seconds{\(label)}"])
            #expect(abs(stamp - (try Date(finished, strategy: .iso8601)).timeIntervalSince1970) < 1)
            // Written by rename: no temporary file is left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".prom.") }.isEmpty)
        }
    }

    @Test func metricsAndEventsAreWrittenForAnInvalidManifest() async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nitems:\n  - url: \(server.url("/a"))\n    conections: 4\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--metrics", dir + "/m.prom", "--events", dir + "/e.jsonl"])
            #expect(run.status == 2)
            let samples = try await prometheusSamples(dir + "/m.prom")
            #expect(samples["jgmirror_last_run_exit_code{manifest=\(path)}"] == 2)
            let lines = try events(String(decoding: try Data(contentsOf: URL(fileURLWithPath: dir + "/e.jsonl")), as: UTF8.self))
            #expect(lines.count == 1)
            #expect(lines.first?["event"] as? String == "run_finished" && lines.first?["exit_code"] as? Int == 2)
        }
    }

    @Test func interruptedRunWritesMetricsAndEventsWithExit130() async throws {
        var route = TestServer.Route(body: TestServer.bytes(count: 16 << 20, seed: 951), etag: "\"951\"")
        // Minutes unless interrupted (it is): a loaded machine cannot let it finish first.
        route.bytesPerSecond = 64 << 10
        server.set("/big", route)
        try await withTestDirectory { dir in
            let yaml =
                "version: 1\nroot: mirror\nitems:\n  - url: \(server.url("/big"))\n    dest: big.bin\n    connections: 2\n    min_segment: 256KiB\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            let (process, _, _) = try launch([
                "sync", path, "--progress", "none", "--metrics", dir + "/m.prom", "--events", dir + "/e.jsonl",
            ])
            // Events are flushed per line: the first progress with bytes shows the transfer
            // under way, and SIGINT goes at once from the thread that saw it.
            let underWay = await send(SIGINT, to: process, within: 60) {
                let text = (try? String(contentsOfFile: dir + "/e.jsonl", encoding: .utf8)) ?? ""
                return text.split(separator: "\n").contains { line in
                    guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                        return false
                    }
                    return event["event"] as? String == "item_progress" && (event["bytes_this_run"] as? Int ?? 0) > 0
                }
            }
            #expect(underWay)
            #expect(await waitFor(seconds: 60, process: process))
            #expect(process.terminationStatus == 130)
            let samples = try await prometheusSamples(dir + "/m.prom")
            #expect(samples["jgmirror_last_run_exit_code{manifest=\(path)}"] == 130)
            #expect(samples["jgmirror_items{manifest=\(path),status=interrupted}"] == 1)
            let lines = try events(String(decoding: try Data(contentsOf: URL(fileURLWithPath: dir + "/e.jsonl")), as: UTF8.self))
            #expect(lines.last?["event"] as? String == "run_finished" && lines.last?["exit_code"] as? Int == 130)
        }
    }

    @Test func reportMergeWritesMergedMetrics() async throws {
        try await withTestDirectory { dir in
            let now = Date()
            let a = RunReport(
                command: .sync, manifest: "m.yaml", started: now, finished: now,
                items: [
                    ItemResult(
                        dest: "a", url: "http://h/a", status: .downloaded, bytes: 10, bytesDownloaded: 10, sha256Expected: "x")
                ])
            let b = RunReport(
                command: .sync, manifest: "m.yaml", started: now, finished: now.addingTimeInterval(2),
                items: [
                    ItemResult(dest: "b", url: "http://h/b", status: .unchanged, bytes: 5, sha256Expected: "y")
                ])
            try a.jsonData().write(to: URL(fileURLWithPath: dir + "/a.json"))
            try b.jsonData().write(to: URL(fileURLWithPath: dir + "/b.json"))
            let run = try await execute([
                "report", "merge", dir + "/a.json", dir + "/b.json", "-o", dir + "/all.json", "--metrics", dir + "/all.prom",
            ])
            #expect(run.status == 0)
            let samples = try await prometheusSamples(dir + "/all.prom")
            #expect(samples["jgmirror_items{manifest=m.yaml,status=downloaded}"] == 1)
            #expect(samples["jgmirror_items{manifest=m.yaml,status=unchanged}"] == 1)
            #expect(samples["jgmirror_last_run_bytes_verified{manifest=m.yaml}"] == 15)
            #expect(samples["jgmirror_last_run_duration_seconds{manifest=m.yaml}"] == 2)
        }
    }
}

/// The plain lines of `--progress lines`.
@Suite struct ProgressLineTests {
    @Test func everyStatusLeavesASpaceBeforeThePath() throws {
        try withTestDirectorySync { dir in
            let path = dir + "/lines.txt"
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try #require(FileHandle(forWritingAtPath: path))
            let renderer = ProgressRenderer(mode: .lines, verbosity: .verbose, output: handle)
            for status in ItemStatus.allCases {
                renderer.show(.itemFinished(ItemResult(dest: "a/f", url: "http://h/f", status: status)))
            }
            renderer.finish()  // a problem line may be held to be grouped with the next
            try handle.close()
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == ItemStatus.allCases.count)
            // One column for every item's path: after the longest status, `interrupted`
            // (which once ran into the path), and a space; a file `--delete` left takes
            // what its longer status needs, and a space too, as does a file kept for
            // its grace period.
            let items = lines.filter { !$0.hasPrefix("delete_skipped") && !$0.hasPrefix("kept_removed") }
            #expect(items.allSatisfy { $0.range(of: " a/f")?.lowerBound.utf16Offset(in: $0) == 11 }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("interrupted a/f") })
            #expect(lines.contains { $0.hasPrefix("delete_skipped a/f") })
            #expect(lines.contains { $0.hasPrefix("kept_removed a/f") })
        }
    }
}
