import Foundation
import JGMirror
import Testing

/// What a person reads of a run: one line per problem rather than per item, the exit
/// codes from the one table in `--help` and the man page, and merged durations that
/// keep their milliseconds.
@Suite struct TerminalSummaryTests {
    /// The lines a renderer wrote, after `body` fed it.
    func lines(mode: ProgressRenderer.Mode, _ body: (ProgressRenderer) -> Void) throws -> [Substring] {
        try withTestDirectorySync { dir in
            let path = dir + "/lines.txt"
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try #require(FileHandle(forWritingAtPath: path))
            body(ProgressRenderer(mode: mode, output: handle))
            try handle.close()
            return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        }
    }

    func failed(_ dest: String, _ code: ErrorCode = .http(404), _ message: String = "the set's list could not be fetched")
        -> ItemResult
    {
        ItemResult(dest: dest, url: "http://h/" + dest, status: .failed, error: ItemError(code: code, message: message))
    }

    @Test func itemsFailingAlikeAreOneLine() throws {
        let shown = try lines(mode: .lines) { renderer in
            renderer.show(.itemFinished(ItemResult(dest: "ok.bin", url: "http://h/ok", status: .downloaded, bytesDownloaded: 10)))
            for index in 0..<60 { renderer.show(.itemFinished(failed("set/f\(index).iso"))) }
            renderer.show(.itemFinished(failed("other.bin", .timeout, "no byte for 30s")))
            renderer.finish()
        }
        #expect(shown.count == 3, "\(shown)")
        #expect(shown[1] == "failed      60 items (set/f0.iso, set/f1.iso, …): http_404: the set's list could not be fetched")
        #expect(shown[2] == "failed      other.bin: timeout: no byte for 30s")
    }

    @Test func anInterruptionIsOneLineWithACount() throws {
        let shown = try lines(mode: .lines) { renderer in
            for index in 0..<147 {
                renderer.show(
                    .itemFinished(
                        ItemResult(
                            dest: "i\(index)", url: "http://h/i", status: .interrupted,
                            error: ItemError(code: .interrupted, message: "stopped by a signal or cancel; resume state kept"))))
            }
            renderer.finish()
        }
        #expect(shown == ["interrupted 147 items (i0, i1, …): interrupted: stopped by a signal or cancel; resume state kept"])
    }

    @Test func progressNoneSaysEachProblemOnceAtTheEnd() throws {
        var items = (0..<53).map { failed("s/\($0)") }
        items.insert(failed("lone.bin", .timeout, "no byte for 30s"), at: 10)
        items.append(
            ItemResult(
                dest: "two", url: "http://h/two", status: .mismatch,
                error: ItemError(code: .checksumMismatch, message: "sha256 differs")))
        let report = RunReport(command: .sync, manifest: "m.yaml", started: Date(), finished: Date(), items: items)
        let shown = try lines(mode: .none) { renderer in renderer.reportProblems(in: report) }
        #expect(
            shown == [
                "failed      53 items (s/0, s/1, …): http_404: the set's list could not be fetched",
                "failed      lone.bin: timeout: no byte for 30s",
                "mismatch    two: checksum_mismatch: sha256 differs",
            ])
        // The report keeps every item.
        #expect(report.items.count == 55)
    }

    @Test func mergedDurationKeepsMilliseconds() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000.250)
        let a = RunReport(command: .sync, manifest: "m.yaml", started: start, finished: start.addingTimeInterval(0.5), items: [])
        let b = RunReport(
            command: .sync, manifest: "m.yaml", started: start.addingTimeInterval(0.1), finished: start.addingTimeInterval(1.5),
            items: [])
        let text = String(decoding: try a.jsonData(), as: UTF8.self)
        #expect(text.contains("\"started\": \"2026-11-18T11:06:40.250Z\""), "\(text)")
        let merged = try RunReport.merge([try RunReport.decode(a.jsonData()), try RunReport.decode(b.jsonData())])
        #expect(merged.durationS == 1.5)
        let written = try #require(try JSONSerialization.jsonObject(with: merged.jsonData()) as? [String: Any])
        #expect(written["duration_s"] as? Double == 1.5)
        // Reports written before timestamps had milliseconds are still read.
        let old = text.replacingOccurrences(of: "40.250Z", with: "40Z").replacingOccurrences(of: "40.750Z", with: "41Z")
        #expect(try RunReport.decode(Data(old.utf8)).durationS == 1)
    }

    @Test func everyExitCodeIsInTheHelpAndTheManPage() async throws {
        let table = try await execute(["--exit-code-table"])
        #expect(table.status == 0)
        let help = try await execute(["--help"])
        let page = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/jgmirror.1"),
            encoding: .utf8)
        let status = try #require(page.range(of: ".Sh \"EXIT STATUS\"")).upperBound
        let exitStatus = String(page[status...])
        // Help text is wrapped at the terminal's width: compared without line breaks.
        let flatHelp = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for code in ExitCode.allCases {
            #expect(table.stdout.contains("\(code.rawValue)\t\(code.meaning)\n"))
            #expect(exitStatus.contains(".It \(code.rawValue)\n\(code.meaning)\n"), "\(code)")
            #expect(flatHelp.contains("\(code.rawValue) \(code.meaning)."), "\(code)")
        }
        #expect(exitStatus.contains(ExitCode.precedenceRule))
        #expect(!exitStatus.contains(".Ex -std"))
    }

    /// The process ends with the status its command decided, and only `@main` ends it:
    /// help, version and completion scripts on stdout with 0, a usage error on stderr
    /// with 2 (not ArgumentParser's 64), a command's own exit code as it threw it.
    @Test func theProcessEndsWithTheStatusItsCommandDecided() async throws {
        let version = try await execute(["--version"])
        #expect(version.status == 0 && version.stdout == JGMirrorVersion.string + "\n" && version.stderr.isEmpty)
        let completion = try await execute(["--generate-completion-script", "bash"])
        #expect(completion.status == 0 && completion.stdout.contains("jgmirror") && completion.stderr.isEmpty)
        let unknown = try await execute(["sync", "--conections", "4", "site.yaml"])
        #expect(unknown.status == 2 && unknown.stdout.isEmpty)
        #expect(unknown.stderr.hasPrefix("jgmirror: Error: Unknown option '--conections'"), "\(unknown.stderr)")
        try await withTestDirectory { dir in
            let missing = try await execute(["plan", dir + "/absent.yaml"])
            #expect(missing.status == 2 && missing.stderr.contains("absent.yaml"), "\(missing.stderr)")
        }
    }
}
