import Foundation
import JGMirror
import TestServer
import Testing

/// Issue 14, reliability and messages, through the built binary: exit codes, what
/// stderr says, what lands on disk, and that nothing is requested when the input is
/// refused.
@Suite struct HardeningEndToEndTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    private func oneItem(_ url: String, in dir: String, extra: String = "") -> String {
        write(manifest(url: url, extra: extra), to: "m.yaml", in: dir)
    }

    // MARK: Numbered points

    @Test func maxSizeOnTheCommandLineCutsOffAnEndlessBody() async throws {
        var route = TestServer.Route(body: [])
        route.endless = true
        server.set("/e", route)
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let path = oneItem(server.url("/e"), in: dir, extra: "connections: 1")
            let run = try await execute(["sync", path, "--max-size", "1MiB", "--progress", "none", "--report", out + "/r.json"])
            #expect(run.status == 1, "\(run.stderr)")
            let item = try #require((try loadReport(out + "/r.json")["items"] as? [[String: Any]])?.first)
            #expect((item["error"] as? [String: Any])?["code"] as? String == "too_large")
            #expect(!exists(dir + "/out.bin") && !exists(dir + "/out.bin.jgpart"))
        }
    }

    @Test(arguments: [["get", "URL", "-o", "OUT"], ["sync", "MANIFEST"]])
    func acceptEncodingOnTheCommandLineIsAUsageError(command: [String]) async throws {
        server.set("/a", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            let path = oneItem(server.url("/a"), in: dir)
            let values = ["URL": server.url("/a"), "OUT": dir + "/out.bin", "MANIFEST": path]
            let run = try await execute(command.map { values[$0] ?? $0 } + ["--header", "Accept-Encoding: gzip"])
            #expect(run.status == 2)
            #expect(
                run.stderr.contains("header 'Accept-Encoding' cannot be set: jgmirror stores files byte for byte"),
                "\(run.stderr)")
            #expect(server.requests().isEmpty)
        }
    }

    @Test func destinationThatIsAFolderExitsTwoBeforeAnyRequest() async throws {
        server.set("/a", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            let path = oneItem(server.url("/a"), in: dir)
            try FileManager.default.createDirectory(atPath: dir + "/out.bin", withIntermediateDirectories: true)
            let run = try await execute(["sync", path])
            #expect(run.status == 2)
            #expect(run.stderr.contains("m.yaml:3:5: destination 'out.bin' is an existing folder"), "\(run.stderr)")
            #expect(server.requests().isEmpty)
            // `plan` says what `sync` would say.
            let plan = try await execute(["plan", path])
            #expect(
                plan.status == 2 && plan.stderr.contains("m.yaml:3:5: destination 'out.bin' is an existing folder"),
                "\(plan.stderr)")
            #expect(!exists(dir + "/out.bin.jgpart"))
        }
    }

    @Test func namesThatDifferOnlyInCaseWarnAndPortableNamesRefuses() async throws {
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nitems:\n  - {url: http://127.0.0.1:9/a, dest: A.bin}\n  - {url: http://127.0.0.1:9/b, dest: a.bin}\n",
                to: "m.yaml", in: dir)
            let plain = try await execute(["plan", path])
            #expect(plain.status == 0)
            #expect(
                plain.stderr.contains("warning: \(path):4:39: destination 'a.bin' and 'A.bin' (line 3) are the same file"),
                "\(plain.stderr)")
            let strict = try await execute(["plan", path, "--portable-names"])
            #expect(strict.status == 2)
            #expect(strict.stderr.contains("\(path):4:39: destination 'a.bin'"), "\(strict.stderr)")
        }
    }

    @Test func getIntoAFolderKeepsTheURLsNameAndWritesNothingOutside() async throws {
        let body = TestServer.bytes(count: 5000, seed: 3)
        server.set("/files/name.bin", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let cwd = dir + "/cwd"
            try FileManager.default.createDirectory(atPath: cwd + "/existing", withIntermediateDirectories: true)
            let url = server.url("/files/name.bin")
            let empty = try await execute(["get", url, "-o", ""], in: cwd)
            #expect(empty.status == 2 && empty.stderr.contains("the destination is empty"), "\(empty.stderr)")
            #expect(server.requests().isEmpty)
            for (output, placed) in [
                (".", cwd + "/name.bin"), ("sub/", cwd + "/sub/name.bin"), ("existing", cwd + "/existing/name.bin"),
            ] {
                let run = try await execute(["get", url, "-o", output], in: cwd)
                #expect(run.status == 0, "\(output): \(run.stderr)")
                #expect(fileSHA(placed) == sha(body), "\(output)")
            }
            #expect(!exists(cwd + "/sub/sub") && !exists(cwd + "/existing.jgpart"))
            // Nothing beside the folder it was told to use.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["cwd"])
        }
    }

    @Test func tagFilterThatSelectsNothingExitsTwoButAnEmptyShardPasses() async throws {
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let path = write(
                "version: 1\nitems:\n  - {url: http://127.0.0.1:9/a, tags: [nightly]}\n  - {url: http://127.0.0.1:9/b, tags: [iso]}\n",
                to: "m.yaml", in: dir)
            let typo = try await execute(["sync", path, "--tag", "nigthly", "--report", out + "/r.json"])
            #expect(typo.status == 2)
            #expect(
                typo.stderr.contains(
                    "--tag nigthly selects no item (no item has the tag nigthly); the manifest's tags are: iso, nightly"),
                "\(typo.stderr)")
            let error = try loadReport(out + "/r.json")["error"] as? [String: Any]
            #expect(error?["code"] as? String == "usage")
            // Two items over 64 shards: most shards are empty, and that is fine.
            let shard = try #require(
                try (0..<64).first { index in
                    let shard = try Shard(index: index, count: 64)
                    return !shard.contains(dest: "a") && !shard.contains(dest: "b")
                })
            let empty = try await execute(["sync", path, "--shard", "\(shard)/64"])
            #expect(empty.status == 0, "\(empty.stderr)")
        }
    }

    // MARK: Messages

    @Test func manifestThatIsAFolderSaysSo() async throws {
        try await withTestDirectory { dir in
            let run = try await execute(["sync", dir])
            #expect(run.status == 2)
            #expect(
                run.stderr == "jgmirror: \(dir): is a folder, not a manifest; give the path of the YAML file\n", "\(run.stderr)")
        }
    }

    @Test func invalidUTF8IsReportedWhereItIs() async throws {
        try await withTestDirectory { dir in
            let path = dir + "/m.yaml"
            _ = FileManager.default.createFile(
                atPath: path,
                contents: Data("version: 1\nitems:\n  - url: http://h/a\n    dest: \"b".utf8) + Data([0xC3, 0x28, 0x22, 0x0A]))
            let run = try await execute(["plan", path])
            #expect(run.status == 2)
            #expect(run.stderr.contains("m.yaml:4:14: the manifest must be UTF-8 text"), "\(run.stderr)")
        }
    }

    @Test func garbageAndOversizedRepliesAreProtocolErrors() async throws {
        var garbage = TestServer.Route(body: [1])
        garbage.fault = { _ in .raw(Array("SSH-2.0-OpenSSH_9.6\r\n".utf8)) }
        server.set("/g", garbage)
        var huge = TestServer.Route(body: [1, 2, 3])
        huge.extraHeaders = ["X-Big: " + String(repeating: "b", count: 2 << 20)]
        server.set("/h", huge)
        try await withTestDirectory { dir in
            let first = try await execute([
                "get", server.url("/g"), "-o", dir + "/g", "--retries", "0", "--report", dir + "/g.json",
            ])
            #expect(first.status == 1)
            #expect(first.stderr.contains("did not answer with HTTP") && !first.stderr.contains("redirect"), "\(first.stderr)")
            let second = try await execute(["get", server.url("/h"), "-o", dir + "/h", "--retries", "0"])
            #expect(second.status == 1)
            #expect(second.stderr.contains("sent a response header larger than libcurl accepts"), "\(second.stderr)")
            #expect(!second.stderr.contains("Out of memory"))
        }
    }

    @Test func verifyNamesWhatStandsWhereAFileShouldBeAndTakesProgress() async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nitems:\n  - url: http://h/a\n    dest: pipe\n", to: "m.yaml", in: dir)
            #expect(mkfifo(dir + "/pipe", 0o644) == 0)
            let run = try await execute(["verify", path, "--progress", "none"])
            #expect(run.status == 3, "\(run.stderr)")
            #expect(run.stderr.contains("\(dir)/pipe is a FIFO, not a regular file"), "\(run.stderr)")
        }
    }

    @Test(arguments: [
        (["--jobs", "-1"], "--jobs must be a whole number from 1 to 4096, not -1"),
        (["--retries", "-1"], "--retries must be a whole number from 0 to 100, not -1"),
        (["--connections", "0"], "--connections must be a whole number from 1 to 64, not 0"),
        (["--shard", "-1/2"], "shard -1/2 is out of range: the index I must be from 0 to 1"),
    ])
    func numbersOutOfRangeNameTheRange(arguments: [String], message: String) async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nitems:\n  - url: http://127.0.0.1:9/a\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path] + arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }

    @Test func reportMergeOfANonReportSaysWhyInOneLine() async throws {
        try await withTestDirectory { dir in
            let bad = write("{\"hello\": 1}\n", to: "bad.json", in: dir)
            let run = try await execute(["report", "merge", bad])
            #expect(run.status == 2)
            #expect(run.stderr == "jgmirror: \(bad) is not a jgmirror JSON report (no 'jgmirror' key)\n", "\(run.stderr)")
            let now = Date()
            let good = try RunReport(command: .sync, manifest: "m", started: now, finished: now, items: []).jsonData()
            #expect(FileManager.default.createFile(atPath: dir + "/good.json", contents: good))
            let merged = try await execute(["report", "merge", dir + "/good.json", "-o", dir + "/all.json"])
            #expect(merged.status == 0)
            // A report without its run's identity is merged, with a warning
            // (docs/reports.md#merging-shard-reports).
            #expect(
                merged.stderr.hasPrefix("jgmirror: \(dir)/good.json does not name its run")
                    && merged.stderr.contains("\nreport merge: 0 items"), "\(merged.stderr)")
        }
    }

    /// `--events - | reader` where the reader goes away (`head -1`, a crashed
    /// consumer): the run is not killed by SIGPIPE; it says so once, finishes the
    /// downloads, writes its report and metrics, and exits 4.
    @Test func anEventsReaderThatGoesAwayDoesNotStopTheRun() async throws {
        let small = TestServer.bytes(count: 1000, seed: 61)
        let large = TestServer.bytes(count: 2 << 20, seed: 62)
        server.set("/small", TestServer.Route(body: small))
        var slow = TestServer.Route(body: large, etag: "\"l\"")
        slow.bytesPerSecond = 1 << 20
        server.set("/large", slow)
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/small")), dest: small.bin}
                  - {url: \(server.url("/large")), dest: large.bin, connections: 2}

                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let arguments = [
                "sync", path, "--events", "-", "--progress", "none", "--report", out + "/r.json", "--metrics", out + "/m.prom",
            ]
            let closed = try await executeWithStdoutClosed(arguments)
            let stderr = closed.stderr
            #expect(!closed.signalled && closed.status == 4, "\(closed.status) \(stderr)")
            #expect(stderr.contains("jgmirror: cannot write events: Broken pipe; the run goes on without them"), "\(stderr)")
            let written = try loadReport(out + "/r.json")
            #expect(written["exit_code"] as? Int == 4)
            let items = try #require(written["items"] as? [[String: Any]])
            #expect(items.map { $0["status"] as? String } == ["unverified", "unverified"])
            #expect(fileSHA(dir + "/large.bin") == sha(large))
            let metrics = try String(contentsOfFile: out + "/m.prom", encoding: .utf8)
            let exitLine = metrics.split(separator: "\n").first { $0.hasPrefix("jgmirror_last_run_exit_code") }
            #expect(exitLine.map { Double($0.split(separator: " ").last ?? "") == 4 } == true, "\(metrics)")

            // verify goes the same way; plan, whose stdout is all it does, ends as SIGPIPE ends it.
            let verifying = try await executeWithStdoutClosed(["verify", path, "--events", "-", "--report", out + "/v.json"])
            #expect(!verifying.signalled && verifying.status == 4, "\(verifying.stderr)")
            #expect(try loadReport(out + "/v.json")["exit_code"] as? Int == 4)
            let planning = try await executeWithStdoutClosed(["plan", path])
            #expect(planning.signalled && planning.status == SIGPIPE)
        }
    }

    /// Byte counts past any file (a hand-edited or hostile report) are refused in one
    /// line naming the key, never summed into an overflow; the largest real ones, merged
    /// many times over, saturate.
    @Test func reportMergeRefusesImpossibleByteCountsAndNeverOverflows() async throws {
        try await withTestDirectory { dir in
            func report(bytes: Int64) throws -> String {
                var item = ItemResult(
                    dest: "a.bin", url: "http://h/a", tag: nil, tags: [], status: .downloaded, connections: 1, attempts: 1,
                    sha256Expected: nil, sha512Expected: nil, insecure: false)
                item.bytes = bytes
                item.bytesDownloaded = bytes
                let now = Date()
                let data = try RunReport(command: .sync, manifest: "m", started: now, finished: now, items: [item]).jsonData()
                let path = dir + "/r\(bytes).json"
                #expect(FileManager.default.createFile(atPath: path, contents: data))
                return path
            }
            for bad in [Int64.max, -1] {
                let path = try report(bytes: bad)
                let run = try await execute(["report", "merge", path, "--metrics", dir + "/m.prom"])
                #expect(run.status == 2, "\(run.stderr)")
                #expect(
                    run.stderr == "jgmirror: \(path) is not a jgmirror JSON report ('items.0.bytes' is invalid: "
                        + "must be a byte count from 0 to 1EiB, not \(bad))\n", "\(run.stderr)")
            }
            let largest = try report(bytes: Rules.maximumSize)
            let merged = try await execute(
                ["report", "merge"] + Array(repeating: largest, count: 10) + [
                    "-o", dir + "/all.json", "--metrics", dir + "/m.prom",
                ])
            #expect(merged.status == 0, "\(merged.stderr)")
            let all = try loadReport(dir + "/all.json")
            let totals = try #require(all["totals"] as? [String: Any])
            #expect((totals["bytes_downloaded"] as? NSNumber)?.int64Value == Int64.max)
            // One report given ten times: said once, in the report and on stderr.
            let warning = "1 destination appears in more than one report (the first: 'a.bin'); each report's items are counted"
            // (After the warning that these reports do not name their run, said once.)
            let warnings = try #require(all["warnings"] as? [String])
            #expect(
                warnings.count == 2 && warnings.last == warning && merged.stderr.contains("jgmirror: \(warning)"),
                "\(merged.stderr)")
            #expect(
                warnings.first
                    == "\(largest) does not name its run (written before jgmirror recorded it): merged without checking manifest, shards or attempts"
            )
        }
    }

    /// `~/.netrc` credentials go to the item's own origin, not to where a redirect
    /// leads, even on the same host (libcurl matches a netrc entry by host alone).
    @Test func netrcCredentialsStayWithTheItemsOrigin() async throws {
        let other = try TestServer()
        let body = TestServer.bytes(count: 500, seed: 63)
        other.set("/file", TestServer.Route(body: body))
        var moved = TestServer.Route(body: [])
        moved.redirect = other.url("/file")
        server.set("/moved", moved)
        try await withTestDirectory { dir in
            write("machine 127.0.0.1 login me password NETRCPASS\n", to: "home/.netrc", in: dir)
            let run = try await execute(
                ["get", server.url("/moved"), "-o", dir + "/out.bin", "-c", "1", "--progress", "none"],
                environment: ["HOME": dir + "/home"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(server.requests("/moved").last?.headers["authorization"]?.hasPrefix("Basic ") == true)
            #expect(other.requests("/file").last?.headers["authorization"] == nil)
            #expect(fileSHA(dir + "/out.bin") == sha(body))
        }
    }

    /// `get` has no manifest: a destination it refuses is named without a made-up place.
    @Test func getNamesARefusedDestinationWithoutAManifestPlace() async throws {
        server.set("/f.bin", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/out/link.bin", withDestinationPath: dir + "/elsewhere/x")
            let run = try await execute(["get", server.url("/f.bin"), "-o", dir + "/out/link.bin", "--progress", "none"])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.hasPrefix("jgmirror: destination 'link.bin' resolves outside the root"), "\(run.stderr)")
            #expect(!exists(dir + "/elsewhere/x") && server.requests().isEmpty)
        }
    }

    /// Sizes past 1 EiB are refused wherever they are given; EiB and PiB are units.
    @Test func sizesPastOneEiBAreRefusedOnTheCommandLine() async throws {
        try await withTestDirectory { dir in
            let path = oneItem("http://127.0.0.1:9/a", in: dir)
            for (option, value) in [("--min-free", "9223372036854775807"), ("--max-size", "2EiB")] {
                let run = try await execute(["sync", path, option, value])
                #expect(run.status == 2 && run.stderr.contains("\(option) must be at most 1EiB"), "\(run.stderr)")
            }
            let get = try await execute(["get", "http://127.0.0.1:9/a", "-o", dir + "/a", "--min-segment", "2EiB"])
            #expect(get.status == 2 && get.stderr.contains("--min-segment must be at most 1EiB"), "\(get.stderr)")
            // 1 EiB itself is taken: the run gets as far as the (closed) port.
            let largest = try await execute(["sync", path, "--max-size", "1EiB", "--retries", "0", "--progress", "none"])
            #expect(largest.status == 1 && largest.stderr.contains("connect"), "\(largest.stderr)")
        }
    }

    /// A device or FIFO where a file would go is never renamed over (`get -o
    /// /dev/null` as root replaced the system's /dev/null with a file).
    @Test func aFIFOOrDeviceAtTheDestinationIsRefusedNotReplaced() async throws {
        server.set("/f.bin", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            #expect(mkfifo(dir + "/fifo", 0o644) == 0)
            let get = try await execute(["get", server.url("/f.bin"), "-o", dir + "/fifo", "--progress", "none"])
            #expect(get.status == 2, "\(get.stderr)")
            #expect(
                get.stderr.contains("destination 'fifo' is a FIFO under \(dir); jgmirror replaces only regular files"),
                "\(get.stderr)")
            let path = oneItem(server.url("/f.bin"), in: dir)
            let sync = try await execute(["sync", path, "--root", dir, "--progress", "none"])
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(mkfifo(dir + "/out2.bin", 0o644) == 0)
            write(
                manifest(url: server.url("/f.bin")).replacingOccurrences(of: "dest: out.bin", with: "dest: out2.bin"),
                to: "m.yaml", in: dir)
            let refused = try await execute(["sync", path, "--root", dir, "--progress", "none"])
            #expect(refused.status == 2 && refused.stderr.contains("is a FIFO"), "\(refused.stderr)")
            var info = stat()
            #expect(lstat(dir + "/fifo", &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
            #expect(lstat(dir + "/out2.bin", &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
            #expect(server.gets("/f.bin").count == 1)  // the good sync's only
        }
    }

    @Test func progressNoneStillSaysWhyAnItemFailed() async throws {
        try await withTestDirectory { dir in
            let path = oneItem(server.url("/missing"), in: dir)
            let run = try await execute(["sync", path, "--progress", "none"])
            #expect(run.status == 1)
            #expect(
                run.stderr.contains("failed      out.bin: http_404: HTTP 404 from \(server.url("/missing"))"), "\(run.stderr)")
        }
    }

    @Test func redirectToARefusedPortNamesBothURLs() async throws {
        var route = TestServer.Route(body: [])
        route.redirect = "http://127.0.0.1:1/moved.bin"
        server.set("/r", route)
        try await withTestDirectory { dir in
            let run = try await execute(["get", server.url("/r"), "-o", dir + "/r.bin", "--retries", "0"])
            #expect(run.status == 1)
            #expect(run.stderr.contains("http://127.0.0.1:1/moved.bin, redirected from \(server.url("/r"))"), "\(run.stderr)")
        }
    }

    @Test func controlCharactersInAURLDerivedNameAreEscaped() async throws {
        try await withTestDirectory { dir in
            let run = try await execute(["get", server.url("/a%00b%1B[2J"), "-o", dir + "/"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("a\\x00b\\x1b[2J"), "\(run.stderr)")
            #expect(!run.stderr.unicodeScalars.contains { $0.value == 0 || $0.value == 0x1B })
            #expect(server.requests().isEmpty)
        }
    }

    @Test func maxRateTakesShortUnitsInAnyCase() async throws {
        server.set("/s", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            for rate in ["1k", "1K", "2m"] {
                let run = try await execute(["get", server.url("/s"), "-o", dir + "/s-\(rate)", "--max-rate", rate])
                #expect(run.status == 0, "\(rate): \(run.stderr)")
            }
        }
    }

    @Test func lockRefusalIsTheLastLineAndTheReportSaysLocked() async throws {
        var route = TestServer.Route(body: TestServer.bytes(count: 8 << 20, seed: 5))
        // Minutes unless killed (it is): the first sync still holds the lock however
        // long a loaded machine takes to start the second.
        route.bytesPerSecond = 32 << 10
        server.set("/slow", route)
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let path = oneItem(server.url("/slow"), in: dir, extra: "connections: 1")
            let (first, _, _) = try launch(["sync", path, "--progress", "none"])
            defer {
                kill(first.processIdentifier, SIGKILL)
                first.waitUntilExit()
            }
            #expect(await waitFor(seconds: 60) { exists(dir + "/out.bin.jgpart") })
            let second = try await execute(["sync", path, "--report", out + "/r.json"])
            #expect(second.status == 4)
            #expect(second.stderr.hasPrefix("jgmirror: another jgmirror sync holds"), "\(second.stderr)")
            #expect(
                second.stderr.split(separator: "\n").count == 1 && !second.stderr.contains("nothing to do"), "\(second.stderr)")
            #expect((try loadReport(out + "/r.json")["error"] as? [String: Any])?["code"] as? String == "locked")
        }
    }

    @Test func runLevelReportErrorCodesSayWhatHappened() async throws {
        try await withTestDirectory { dir in
            let bad = write("version: 1\nitems:\n  - url: http://127.0.0.1:9/a\n    conections: 2\n", to: "bad.yaml", in: dir)
            _ = try await execute(["sync", bad, "--report", dir + "/m.json"])
            #expect((try loadReport(dir + "/m.json")["error"] as? [String: Any])?["code"] as? String == "manifest")
            let good = write("version: 1\nitems:\n  - url: http://127.0.0.1:9/a\n", to: "good.yaml", in: dir)
            #expect(FileManager.default.createFile(atPath: dir + "/file", contents: Data()))
            let local = try await execute(["sync", good, "--root", dir + "/file/root", "--report", dir + "/l.json"])
            #expect(local.status == 4)
            #expect((try loadReport(dir + "/l.json")["error"] as? [String: Any])?["code"] as? String == "local")
        }
    }
}
