import Foundation
import JGMirror
import Testing
import TestServer

/// Runs the built `jgmirror` binary and checks stdout, stderr, exit code and report.
@Suite struct EndToEndTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    @Test func typoedKeyExitsTwoWithPositionAndFetchesNothing() async throws {
        server.set("/a", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            let path = write("version: 1\nitems:\n  - url: \(server.url("/a"))\n    conections: 4\n", to: "site.yaml", in: dir)
            let run = try await execute(["sync", path, "--report", dir + "/r.json"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("site.yaml:4:5: unknown key 'conections' in an item (did you mean 'connections'?)"))
            #expect(server.requests().isEmpty)
            #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 2)
        }
    }

    @Test func oneBadChecksumAmongTwentyExitsThreeThenGoodItemsAreUnchanged() async throws {
        var lines = ["version: 1", "items:"]
        for index in 0..<21 {
            let body = TestServer.bytes(count: 20_000 + index * 1000, seed: UInt64(index + 100))
            server.set("/f\(index)", TestServer.Route(body: body, etag: "\"\(index)\""))
            let checksum = index == 20 ? String(repeating: "a", count: 64) : sha(body)
            lines += ["  - url: \(server.url("/f\(index)"))", "    dest: files/f\(index).bin", "    sha256: \(checksum)"]
            if index == 20 { lines.append("    tags: [bad]") }
        }
        try await withTestDirectory { dir in
            let path = write(lines.joined(separator: "\n") + "\n", to: "m.yaml", in: dir)
            let first = try await execute(["sync", path, "--progress", "none", "--report", "-"])
            #expect(first.status == 3)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
            let totals = try #require(report["totals"] as? [String: Any])
            #expect(totals["downloaded"] as? Int == 20)
            #expect(totals["mismatch"] as? Int == 1)
            let items = try #require(report["items"] as? [[String: Any]])
            let bad = try #require(items.first { $0["status"] as? String == "mismatch" })
            #expect(bad["sha256_expected"] as? String == String(repeating: "a", count: 64))
            #expect((bad["sha256_actual"] as? String)?.count == 64)
            #expect(exists(dir + "/files/f20.bin.jgbad") && !exists(dir + "/files/f20.bin"))
            #expect(exists(dir + "/files/f0.bin"))

            let before = server.requests().count
            let second = try await execute(["sync", path, "--skip-tag", "bad", "--report", dir + "/r2.json"])
            #expect(second.status == 0)
            #expect(server.requests().count == before)
            let again = try loadReport(dir + "/r2.json")
            #expect((again["totals"] as? [String: Any])?["unchanged"] as? Int == 20)
            #expect(second.stderr.contains("20 unchanged"))
        }
    }

    @Test func planPrintsTheQueueOnStdout() async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nitems:\n  - url: http://127.0.0.1:9/x.iso\n    dest: isos/\n", to: "m.yaml", in: dir)
            let run = try await execute(["plan", path])
            #expect(run.status == 0)
            #expect(run.stdout.contains("fetch"))
            #expect(run.stdout.contains("isos/x.iso"))
            #expect(run.stderr.contains("1 of 1 items"))
        }
    }

    /// SIGKILL mid-transfer, then a second run completes from the saved state.
    @Test func killedSyncResumesOnTheNextRun() async throws {
        let body = TestServer.bytes(count: 12 << 20, seed: 77)
        var route = TestServer.Route(body: body, etag: "\"k\"")
        route.bytesPerSecond = 512 << 10
        server.set("/big", route)
        try await withTestDirectory { dir in
            let yaml = "version: 1\nitems:\n  - url: \(server.url("/big"))\n    dest: big.bin\n    sha256: \(sha(body))\n    connections: 3\n    min_segment: 256KiB\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            let (process, _, _) = try launch(["sync", path, "--progress", "none"])
            #expect(await waitFor(seconds: 15) { exists(dir + "/big.bin.jgd") })
            try await Task.sleep(nanoseconds: 1_500_000_000)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(!exists(dir + "/big.bin"))
            #expect(exists(dir + "/big.bin.jgpart"))

            server.update("/big") { $0.bytesPerSecond = nil }
            let second = try await execute(["sync", path, "--report", dir + "/r.json"])
            #expect(second.status == 0)
            let items = try #require(try loadReport(dir + "/r.json")["items"] as? [[String: Any]])
            let resumed = try #require(items.first?["resumed_from"] as? Int)
            let downloaded = try #require(items.first?["bytes_downloaded"] as? Int)
            #expect(resumed > 0)
            #expect(downloaded < body.count)
            #expect(fileSHA(dir + "/big.bin") == sha(body))
        }
    }

    @Test func sigintExits130WithReportAndState() async throws {
        let body = TestServer.bytes(count: 12 << 20, seed: 78)
        var route = TestServer.Route(body: body, etag: "\"s\"")
        route.bytesPerSecond = 1 << 20
        server.set("/big", route)
        try await withTestDirectory { dir in
            let yaml = "version: 1\nitems:\n  - url: \(server.url("/big"))\n    dest: big.bin\n    connections: 2\n    min_segment: 256KiB\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            let (process, _, _) = try launch(["sync", path, "--progress", "none", "--report", dir + "/r.json"])
            #expect(await waitFor(seconds: 15) { exists(dir + "/big.bin.jgd") })
            kill(process.processIdentifier, SIGINT)
            #expect(await waitFor(seconds: 5, process: process))
            #expect(process.terminationStatus == 130)
            let report = try loadReport(dir + "/r.json")
            #expect(report["exit_code"] as? Int == 130)
            #expect((report["items"] as? [[String: Any]])?.first?["status"] as? String == "interrupted")
            #expect(exists(dir + "/big.bin.jgd") && exists(dir + "/big.bin.jgpart"))
        }
    }

    @Test func secondConcurrentSyncExitsFour() async throws {
        // One connection at 512 KiB/s: the first sync holds the lock for 16 s unless killed.
        let body = TestServer.bytes(count: 8 << 20, seed: 79)
        var route = TestServer.Route(body: body)
        route.bytesPerSecond = 512 << 10
        server.set("/big", route)
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nitems:\n  - url: \(server.url("/big"))\n    dest: big.bin\n    connections: 1\n", to: "m.yaml", in: dir)
            let (first, _, _) = try launch(["sync", path, "--progress", "none"])
            #expect(await waitFor(seconds: 10) { exists(dir + "/big.bin.jgpart") })
            let second = try await execute(["sync", path])
            #expect(second.status == 4)
            #expect(second.stderr.contains(".jgmirror.lock"))
            kill(first.processIdentifier, SIGTERM)
            first.waitUntilExit()
        }
    }

    @Test func reportMergeCombinesShards() async throws {
        try await withTestDirectory { dir in
            let now = Date()
            let a = RunReport(command: "sync", manifest: "m.yaml", started: now, finished: now, items: [
                ItemResult(dest: "a", url: "http://h/a", status: .downloaded, bytesDownloaded: 10)
            ])
            let b = RunReport(command: "sync", manifest: "m.yaml", started: now, finished: now, items: [
                ItemResult(dest: "b", url: "http://h/b", status: .failed, error: ItemError(code: "http_404", message: "x"))
            ])
            try a.jsonData().write(to: URL(fileURLWithPath: dir + "/a.json"))
            try b.jsonData().write(to: URL(fileURLWithPath: dir + "/b.json"))
            let run = try await execute(["report", "merge", dir + "/a.json", dir + "/b.json", "-o", dir + "/all.json"])
            #expect(run.status == 1)
            let merged = try loadReport(dir + "/all.json")
            #expect((merged["totals"] as? [String: Any])?["items"] as? Int == 2)
            #expect(merged["exit_code"] as? Int == 1)
        }
    }

    @Test func threeShardsOnThreeRootsFetchEveryFileOnce() async throws {
        var lines = ["version: 1", "items:"]
        for index in 0..<30 {
            server.set("/s\(index)", TestServer.Route(body: TestServer.bytes(count: 3000 + index, seed: UInt64(index))))
            lines += ["  - url: \(server.url("/s\(index)"))", "    dest: d\(index % 4)/s\(index).bin"]
        }
        try await withTestDirectory { dir in
            let path = write(lines.joined(separator: "\n") + "\n", to: "m.yaml", in: dir)
            var reports: [String] = []
            for shard in 0..<3 {
                let report = dir + "/shard\(shard).json"
                let run = try await execute(
                    ["sync", path, "--shard", "auto", "--shard-count", "3", "--root", dir + "/root\(shard)", "--report", report],
                    environment: ["JOB_COMPLETION_INDEX": "\(shard)"])
                #expect(run.status == 0, "\(run.stderr)")
                reports.append(report)
            }
            // Each file was requested exactly once across the three shards.
            for index in 0..<30 { #expect(server.requests("/s\(index)").count == 1, "s\(index)") }
            var placed: [String] = []
            for shard in 0..<3 {
                let root = dir + "/root\(shard)"
                let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
                placed += files.filter { $0.hasSuffix(".bin") }
            }
            #expect(placed.count == 30 && Set(placed).count == 30)
            let merged = try await execute(["report", "merge"] + reports + ["-o", dir + "/all.json"])
            #expect(merged.status == 0)
            let totals = try #require(try loadReport(dir + "/all.json")["totals"] as? [String: Any])
            #expect(totals["items"] as? Int == 30)
            #expect(totals["unverified"] as? Int == 30)
        }
    }

    @Test func failFastStartsNoItemAfterTheFirstFailure() async throws {
        var lines = ["version: 1", "items:", "  - url: \(server.url("/missing"))", "    dest: first.bin", "    retries: 1"]
        for index in 0..<10 {
            server.set("/ok\(index)", TestServer.Route(body: [UInt8(index)]))
            lines += ["  - url: \(server.url("/ok\(index)"))", "    dest: ok\(index).bin"]
        }
        try await withTestDirectory { dir in
            let path = write(lines.joined(separator: "\n") + "\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--jobs", "1", "--fail-fast", "--retry-delay", "10ms", "--report", dir + "/r.json"])
            #expect(run.status == 1)
            let report = try loadReport(dir + "/r.json")
            let items = try #require(report["items"] as? [[String: Any]])
            #expect(items.first?["status"] as? String == "failed")
            #expect(items.dropFirst().allSatisfy { $0["status"] as? String == "skipped" })
            #expect((0..<10).allSatisfy { server.requests("/ok\($0)").isEmpty })
        }
    }

    @Test func credentialsAndRedactedHeadersAppearInNoReportOrLog() async throws {
        server.set("/secret", TestServer.Route(body: TestServer.bytes(count: 2000, seed: 9)))
        try await withTestDirectory { dir in
            let url = server.url("/secret").replacingOccurrences(of: "http://", with: "http://alice:hunter2@")
            let yaml = """
                version: 1
                defaults:
                  headers: {Authorization: "Bearer tok-${JG_TEST_TOKEN}", X-Api-Key: key-s3cr3t}
                  redact: [X-Api-Key]
                items:
                  - url: \(url)
                    dest: s.bin
                  - url: \(server.url("/absent")).?token=1
                    dest: absent.bin
                    retries: 1
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let run = try await execute(
                ["sync", path, "--verbose", "--progress", "lines", "--retry-delay", "10ms", "--report", dir + "/r.json",
                 "--junit", dir + "/j.xml", "--header", "Cookie: session=c00kie"],
                environment: ["JG_TEST_TOKEN": "xyzzy"])
            #expect(run.status == 1)
            let report = try String(contentsOfFile: dir + "/r.json", encoding: .utf8)
            let junit = try String(contentsOfFile: dir + "/j.xml", encoding: .utf8)
            for secret in ["hunter2", "xyzzy", "key-s3cr3t"] {
                #expect(!report.contains(secret) && !junit.contains(secret) && !run.stderr.contains(secret) && !run.stdout.contains(secret), "\(secret)")
            }
            #expect(report.contains("alice:***@") || report.contains("***@"))
            // The credentials and headers were still sent.
            let request = try #require(server.requests("/secret").first)
            #expect(request.headers["authorization"] == "Bearer tok-xyzzy")
            #expect(request.headers["x-api-key"] == "key-s3cr3t")
            #expect(request.headers["cookie"] == "session=c00kie")
        }
    }

    @Test func primaryNotFoundCompletesFromItsMirror() async throws {
        let body = TestServer.bytes(count: 50_000, seed: 11)
        server.set("/mirror/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nitems:\n  - url: \(server.url("/gone/f"))\n    mirrors: [\(server.url("/mirror/f"))]\n    dest: f.bin\n    sha256: \(sha(body))\n",
                to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--report", dir + "/r.json"])
            #expect(run.status == 0)
            #expect(fileSHA(dir + "/f.bin") == sha(body))
        }
    }

    @Test func progressModesWriteWhatTheySay() async throws {
        let body = TestServer.bytes(count: 3 << 20, seed: 21)
        var route = TestServer.Route(body: body, etag: "\"p\"")
        route.bytesPerSecond = 3 << 20
        server.set("/p", route)
        try await withTestDirectory { dir in
            let yaml = "version: 1\nitems:\n  - {url: \(server.url("/p")), dest: p.bin, sha256: \(sha(body)), connections: 2, min_segment: 256KiB}\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            let bars = try await execute(["sync", path, "--progress", "bars", "--root", dir + "/bars"])
            #expect(bars.status == 0)
            #expect(bars.stderr.contains("\u{1B}[") && bars.stderr.contains("] ") && bars.stderr.contains("total "), "\(bars.stderr)")
            #expect(bars.stderr.contains("connections"))
            let lines = try await execute(["sync", path, "--progress", "lines", "--root", dir + "/lines"])
            #expect(lines.stderr.contains("downloaded p.bin") && !lines.stderr.contains("\u{1B}["), "\(lines.stderr)")
            let quiet = try await execute(["sync", path, "--progress", "none", "--quiet", "--root", dir + "/quiet"])
            #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
            #expect(bars.stdout.isEmpty && lines.stdout.isEmpty && quiet.stdout.isEmpty)
        }
    }

    @Test func localWriteFailureExitsFourNamingThePath() async throws {
        // A file-size limit makes reserving the 3 MiB part file fail (EFBIG); running
        // as root, this is a local failure no permission bit could provoke.
        let body = TestServer.bytes(count: 3 << 20, seed: 5)
        server.set("/big", TestServer.Route(body: body, etag: "\"b\""))
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nitems:\n  - {url: \(server.url("/big")), dest: big.bin, connections: 4, min_segment: 256KiB}\n",
                to: "m.yaml", in: dir)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -f 1024; exec \"$0\" sync \"$1\" --report \"$2\"", jgmirrorBinary, path, dir + "/r.json"]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 4, "\(stderr)")
            #expect(stderr.contains(dir + "/big.bin.jgpart"), "\(stderr)")
            #expect(!exists(dir + "/big.bin"))
            #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 4)
        }
    }

    @Test func unwritableFolderExitsFourNamingThePath() async throws {
        server.set("/f", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            // A file where the item's folder should be.
            write("not a folder", to: "blocker", in: dir)
            let path = write("version: 1\nitems:\n  - {url: \(server.url("/f")), dest: blocker/f.bin}\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path])
            #expect(run.status == 4, "\(run.stderr)")
            #expect(run.stderr.contains(dir + "/blocker"), "\(run.stderr)")
            #expect(server.requests("/f").isEmpty)
        }
    }

    @Test(arguments: ["../x", "/abs/x", "a/../../x", "link/x"])
    func escapingDestinationsAreRefusedWithExitTwo(dest: String) async throws {
        server.set("/e", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/outside", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/root/link", withDestinationPath: dir + "/outside")
            let path = write("version: 1\nroot: root\nitems:\n  - url: \(server.url("/e"))\n    dest: \(dest)\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path])
            #expect(run.status == 2)
            // FILE:LINE:COL: the value for a lexical escape, the item for one through a symlink.
            #expect(run.stderr.contains("m.yaml:5:11: destination") || run.stderr.contains("m.yaml:4:5: destination"), "\(run.stderr)")
            #expect(server.requests().isEmpty)
            let outside = try FileManager.default.contentsOfDirectory(atPath: dir + "/outside")
            #expect(outside.isEmpty)
            #expect(!exists(dir + "/x") && !exists("/abs/x"))
        }
    }
}

/// The README's library example is the example program the package builds.
@Suite struct ReadmeTests {
    @Test func readmeShowsTheCompiledExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(
            contentsOf: root.appendingPathComponent("Examples/MirrorTwoFiles/main.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + example + "```"))
    }
}
