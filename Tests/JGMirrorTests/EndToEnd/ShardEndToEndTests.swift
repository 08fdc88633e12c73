import Foundation
import JGMirror
import TestServer
import Testing

/// Shards through the built binary as a Slurm array runs them (docs/scale-out.md#slurm): `--shard
/// auto` from the array's variables, reports that name their run, and `report merge`
/// of all shards, of all but one, and of two manifests.
@Suite struct ShardEndToEndTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// A manifest of eight small files on the test server.
    func manifest(in dir: String, name: String = "m.yaml", comment: String = "") -> String {
        var text = "version: 1\n\(comment)items:\n"
        for n in 0..<8 {
            let body = TestServer.bytes(count: 300 + n, seed: UInt64(n))
            server.set("/f\(n)", TestServer.Route(body: body))
            text += "  - url: \(server.url("/f\(n)"))\n    dest: f\(n).bin\n    sha256: \(sha(body))\n"
        }
        return write(text, to: name, in: dir)
    }

    /// Runs task `task` of the Slurm array `--array=1-4` and returns its report's path.
    func task(_ task: Int, manifest: String, in dir: String) async throws -> String {
        let report = dir + "/report-\(task).json"
        let environment = [
            "SLURM_ARRAY_TASK_ID": "\(task)", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4",
            "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "1",
        ]
        let run = try await execute(
            ["sync", manifest, "--shard", "auto", "--root", dir + "/mirror", "--progress", "none", "--report", report],
            environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        return report
    }

    @Test func anArrayFromOneMirrorsEveryFileAndTheMergeIsComplete() async throws {
        try await withTestDirectory { dir in
            let path = manifest(in: dir)
            var reports: [String] = []
            for number in 1...4 { reports.append(try await task(number, manifest: path, in: dir)) }
            let first = try loadReport(reports[0])
            let run = try #require(first["run"] as? [String: Any])
            let bytes = try #require(FileManager.default.contents(atPath: path))
            #expect(run["manifest_sha256"] as? String == sha([UInt8](bytes)))
            #expect(run["shard"] as? String == "0/4")
            #expect((run["host"] as? String)?.isEmpty == false)
            let merged = try await execute(["report", "merge"] + reports + ["-o", dir + "/merged.json"])
            #expect(merged.status == 0, "\(merged.stderr)")
            let all = try loadReport(dir + "/merged.json")
            #expect(all["incomplete"] as? Bool == false)
            #expect((all["totals"] as? [String: Any])?["downloaded"] as? Int == 8)
            for n in 0..<8 { #expect(exists(dir + "/mirror/f\(n).bin")) }

            // Without shard 2/4's report: incomplete, shard_missing, exit 1.
            let partial = try await execute(["report", "merge", reports[0], reports[1], reports[3], "-o", dir + "/partial.json"])
            #expect(partial.status == 1, "\(partial.stderr)")
            #expect(
                partial.stderr.hasPrefix("jgmirror: shard_missing: no report of shard 2/4: the merged report is incomplete\n"),
                "\(partial.stderr)")
            let lacking = try loadReport(dir + "/partial.json")
            #expect(lacking["incomplete"] as? Bool == true)
            #expect(lacking["missing_shards"] as? [String] == ["2/4"])
            #expect((lacking["error"] as? [String: Any])?["code"] as? String == "shard_missing")
        }
    }

    @Test func reportsOfTwoManifestsAreNotMerged() async throws {
        try await withTestDirectory { dir in
            let one = manifest(in: dir)
            let other = manifest(in: dir, name: "other.yaml", comment: "# another manifest\n")
            let a = try await task(1, manifest: one, in: dir)
            try FileManager.default.moveItem(atPath: a, toPath: dir + "/a.json")
            let b = try await task(2, manifest: other, in: dir)
            let merged = try await execute(["report", "merge", dir + "/a.json", b, "-o", dir + "/merged.json"])
            #expect(merged.status == 2)
            #expect(
                merged.stderr.hasPrefix("jgmirror: \(b) is a report of another run than \(dir)/a.json: manifest sha256 "),
                "\(merged.stderr)")
            #expect(merged.stderr.split(separator: "\n").count == 1)
        }
    }

    @Test func aShardCountBesideAnExplicitShardIsAUsageError() async throws {
        try await withTestDirectory { dir in
            let path = manifest(in: dir)
            let run = try await execute(["sync", path, "--shard", "1/4", "--shard-count", "4", "--root", dir + "/mirror"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("--shard-count goes only with --shard auto"), "\(run.stderr)")
            #expect(server.requests("/f0").isEmpty)
        }
    }
}
