import Foundation
import JGMirror
import Testing

/// `--shard I/N` and `--shard-count` take at most 100,000 shards, and `report merge`
/// works in the reports it is given, however many shards they claim.
@Suite struct ShardBoundTests {
    @Test func aShardCountPastTheBoundIsAUsageError() async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nroot: mirror\nitems:\n  - url: http://127.0.0.1:9/a\n", to: "m.yaml", in: dir)
            let explicit = try await execute(["sync", path, "--shard", "0/1000000"])
            #expect(explicit.status == 2)
            #expect(
                explicit.stderr.contains("shard 0/1000000 is out of range: the count N must be from 1 to 100000"),
                "\(explicit.stderr)")
            let counted = try await execute(
                ["sync", path, "--shard", "auto", "--shard-count", "1000000"], environment: ["JOB_COMPLETION_INDEX": "0"])
            #expect(counted.status == 2)
            #expect(counted.stderr.contains("--shard-count must be a whole number from 1 to 100000"), "\(counted.stderr)")
            let largest = try await execute(["plan", path, "--shard", "0/100000"])
            #expect(largest.status == 0, "\(largest.stderr)")
        }
    }

    /// A shard report, with its run's shard spelled `shard`, written at `dir/name`.
    func report(shard: String, host: String = "n1", in dir: String, name: String) throws -> String {
        let now = Date()
        var report = RunReport(command: .sync, manifest: "m.yaml", started: now, finished: now, items: [])
        report.run = RunIdentity(manifestSHA256: "aaaa", shard: try Shard(index: 0, count: 2), host: host)
        var object = try #require(try JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
        var run = try #require(object["run"] as? [String: Any])
        run["shard"] = shard
        object["run"] = run
        let path = dir + "/" + name
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aReportClaimingAHugeShardCountIsRefusedAtOnce() async throws {
        try await withTestDirectory { dir in
            let crafted = try report(shard: "0/1000000000", in: dir, name: "crafted.json")
            // Memory bounded, as the merge once took 4 GB for this report and went on.
            let script = "ulimit -v 1500000; exec \"$0\" report merge \"$1\" -o \"$2\""
            let run = try await runProgram("/bin/sh", ["-c", script, jgmirrorBinary, crafted, dir + "/all.json"])
            #expect(run.status == 2 && !run.signalled, "\(run.stderr)")
            #expect(
                run.stderr.contains(
                    "'run.shard' is invalid: shard 0/1000000000 is out of range: the count N must be from 1 to 100000"),
                "\(run.stderr)")
        }
    }

    @Test func missingShardsAreNamedInRunsNotOneByOne() async throws {
        try await withTestDirectory { dir in
            let first = try report(shard: "0/100000", in: dir, name: "a.json")
            let second = try report(shard: "5/100000", host: "n2", in: dir, name: "b.json")
            let run = try await execute(["report", "merge", first, second, "-o", dir + "/all.json"])
            #expect(run.status == 1, "\(run.stderr)")
            let merged = try loadReport(dir + "/all.json")
            #expect(merged["missing_shards"] as? [String] == ["1-4/100000", "6-99999/100000"])
            #expect(
                ((merged["error"] as? [String: Any])?["message"] as? String)
                    == "no report of shards 1-4/100000, 6-99999/100000: the merged report is incomplete")
            // A merged report is read back as it was written.
            let again = try await execute(["report", "merge", dir + "/all.json", "-o", dir + "/again.json"])
            #expect(again.status == 1, "\(again.stderr)")
        }
    }
}

/// The runs of absent shards a merged report names, on their own.
@Suite struct ShardSpanTests {
    @Test func theMissingRunsFollowTheShardsPresent() {
        #expect(ShardSpan.missing(from: [0, 5], count: 100_000).map(\.description) == ["1-4/100000", "6-99999/100000"])
        #expect(ShardSpan.missing(from: [2, 0, 1], count: 3).isEmpty)
        #expect(ShardSpan.missing(from: [], count: 1).map(\.description) == ["0/1"])
        #expect(ShardSpan.missing(from: [1, 1, 3], count: 4).map(\.description) == ["0/4", "2/4"])
    }

    @Test func aSpanIsReadAsItIsWritten() {
        for text in ["0/1", "1-4/100000", "99999/100000"] { #expect(ShardSpan(parsing: text)?.description == text) }
        for text in ["3-1/4", "0/0", "-0/2", "1-+2/4", "4/4", "0/100001", "1-/4", "a/4"] {
            #expect(ShardSpan(parsing: text) == nil, "\(text)")
        }
    }
}
