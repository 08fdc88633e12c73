import Foundation
import Testing

@testable import JGMirror

/// `report merge` over reports that name their run (docs/reports.md#merging-shard-reports): one
/// manifest and one count, the latest attempt of each shard, a lost shard shown and exit 1.
@Suite struct ReportMergeTests {
    let start = Date(timeIntervalSince1970: 1_795_000_000)

    /// A shard report as written to disk and read back, with `downloaded` items of
    /// 100 bytes each.
    func shard(
        _ index: Int, of count: Int, manifest: String = "aaaa", host: String = "n1", startingAfter offset: Double = 0,
        downloaded: [String], interrupted: [String] = []
    ) throws -> RunReport {
        let items =
            downloaded.map { ItemResult(dest: $0, url: "http://o/\($0)", status: .downloaded, bytes: 100, bytesDownloaded: 100) }
            + interrupted.map {
                ItemResult(dest: $0, url: "http://o/\($0)", status: .interrupted, bytes: 100, bytesDownloaded: 40)
            }
        var report = RunReport(
            command: .sync, manifest: "m.yaml", started: start.addingTimeInterval(offset),
            finished: start.addingTimeInterval(offset + 1.25), items: items)
        report.run = RunIdentity(manifestSHA256: manifest, shard: try Shard(index: index, count: count), host: host)
        return try RunReport.decode(report.jsonData())
    }

    @Test func aReportNamesItsRun() throws {
        let report = try shard(1, of: 3, downloaded: ["a"])
        let written = try #require(try JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
        let run = try #require(written["run"] as? [String: Any])
        #expect(run["manifest_sha256"] as? String == "aaaa")
        #expect(run["shard"] as? String == "1/3")
        #expect(run["host"] as? String == "n1")
        #expect(report.run?.shard == (try Shard(index: 1, count: 3)))
    }

    @Test func aMissingShardMakesTheMergeIncomplete() throws {
        let merged = try RunReport.merge([try shard(0, of: 3, downloaded: ["a"]), try shard(2, of: 3, downloaded: ["c"])])
        #expect(merged.exitCode == .transferFailed)
        #expect(merged.isIncomplete)
        #expect(merged.missingShards.map(\.description) == ["1/3"])
        #expect(merged.error?.code == .shardMissing)
        let written = try #require(try JSONSerialization.jsonObject(with: merged.jsonData()) as? [String: Any])
        #expect(written["incomplete"] as? Bool == true)
        #expect(written["missing_shards"] as? [String] == ["1/3"])
        #expect((written["error"] as? [String: Any])?["code"] as? String == "shard_missing")
        #expect(written["exit_code"] as? Int == 1)
    }

    @Test func everyShardPresentIsComplete() throws {
        let merged = try RunReport.merge((0..<3).map { try shard($0, of: 3, downloaded: ["f\($0)"]) })
        #expect(merged.exitCode == .success)
        #expect(!merged.isIncomplete)
        #expect(merged.run?.shardCount == 3)
        #expect(merged.run?.manifestSHA256 == "aaaa")
        let written = try #require(try JSONSerialization.jsonObject(with: merged.jsonData()) as? [String: Any])
        #expect(written["incomplete"] as? Bool == false)
    }

    @Test func theLatestAttemptOfAShardWinsAndEarlierBytesCount() throws {
        let killed = try shard(1, of: 2, host: "n2", downloaded: ["b1"], interrupted: ["b2", "b3"])
        let requeued = try shard(1, of: 2, host: "n3", startingAfter: 30, downloaded: ["b2", "b3"])
        let other = try shard(0, of: 2, downloaded: ["a1"])
        // Given in any order, the later start wins.
        let merged = try RunReport.merge([requeued, other, killed])
        #expect(merged.items.map(\.dest).sorted() == ["a1", "b2", "b3"])
        #expect(merged.exitCode == .success)
        #expect(merged.warnings.isEmpty)
        // 100 (a1) + 200 (b2, b3 again) + 180 (the killed attempt's b1 and two partial items).
        #expect(merged.totals.bytesDownloaded == 480)
        #expect(
            merged.attempts.map { "\($0.shard) \($0.host ?? "") \($0.latest)" } == ["0/2 n1 true", "1/2 n2 false", "1/2 n3 true"])
        // Read back, the merged report keeps its attempts and its totals.
        let again = try RunReport.decode(merged.jsonData())
        #expect(again.attempts == merged.attempts)
        #expect(again.totals.bytesDownloaded == 480)
        #expect(again.durationS == 31.25)
    }

    @Test func theSameReportTwiceIsOneAttempt() throws {
        let a = try shard(0, of: 1, downloaded: ["a"])
        let merged = try RunReport.merge([a, a], names: ["a.json", "copy.json"])
        #expect(merged.items.count == 1)
        #expect(merged.attempts.count == 1)
        #expect(merged.warnings.first?.contains("copy.json repeats an attempt") == true)
    }

    @Test func reportsOfDifferentManifestsAreRefused() throws {
        let reports = [try shard(0, of: 2, downloaded: ["a"]), try shard(1, of: 2, manifest: "bbbb", downloaded: ["b"])]
        #expect(throws: UsageError.self) { try RunReport.merge(reports, names: ["a.json", "b.json"]) }
        do {
            _ = try RunReport.merge(reports, names: ["a.json", "b.json"])
        } catch {
            #expect(error.message.hasPrefix("b.json is a report of another run than a.json: manifest sha256 aaaa and bbbb"))
        }
    }

    @Test func reportsOfDifferentCountsAreRefused() throws {
        let reports = [try shard(0, of: 2, downloaded: ["a"]), try shard(1, of: 3, downloaded: ["b"])]
        #expect(throws: UsageError.self) { try RunReport.merge(reports) }
    }

    @Test func reportsWithoutIdentityMergeWithAWarning() throws {
        let old = RunReport(
            command: .sync, manifest: "m.yaml", started: start, finished: start,
            items: [
                ItemResult(dest: "x", url: "http://o/x", status: .downloaded, bytesDownloaded: 5)
            ])
        var text = String(decoding: try old.jsonData(), as: UTF8.self)
        #expect(!text.contains("\"run\""))
        text = text.replacingOccurrences(of: "\"run\"", with: "\"ignored\"")
        let read = try RunReport.decode(Data(text.utf8))
        let merged = try RunReport.merge([read, read], names: ["one.json", "two.json"])
        #expect(merged.exitCode == .success)
        #expect(merged.items.count == 2)
        #expect(merged.warnings.first?.hasPrefix("one.json, two.json do not name their run") == true)
        #expect(!merged.isIncomplete)
    }

    /// The shards' `hosts` sections add up per origin, every attempt counted; the
    /// merged state is the worst a shard ended with.
    @Test func hostSectionsAddUpAndKeepTheWorstState() throws {
        func host(_ origin: String, _ requests: Int, state: String, cooling: Double = 0) -> HostSummary {
            HostSummary(
                origin: origin, requests: requests, bytes: Int64(requests) * 10, failures: requests / 2,
                throttled: requests / 4, coolingS: cooling, state: state)
        }
        func withHosts(_ report: RunReport, _ hosts: [HostSummary]) throws -> RunReport {
            var report = report
            report.hosts = hosts
            return try RunReport.decode(report.jsonData())
        }
        let killed = try withHosts(
            try shard(1, of: 2, host: "n2", downloaded: ["b1"], interrupted: ["b2"]),
            [host("http://a:80", 4, state: "down", cooling: 1.5)])
        let requeued = try withHosts(
            try shard(1, of: 2, host: "n3", startingAfter: 30, downloaded: ["b2"]),
            [host("http://a:80", 8, state: "up", cooling: 2.25), host("https://b:443", 2, state: "cooling")])
        let other = try withHosts(try shard(0, of: 2, downloaded: ["a1"]), [host("https://b:443", 6, state: "suspect")])
        let merged = try RunReport.merge([requeued, other, killed])
        #expect(
            merged.hosts == [
                HostSummary(
                    origin: "http://a:80", requests: 12, bytes: 120, failures: 6, throttled: 3, coolingS: 3.75, state: "down"),
                HostSummary(
                    origin: "https://b:443", requests: 8, bytes: 80, failures: 4, throttled: 1, coolingS: 0, state: "suspect"),
            ])
        // Written and read back, the section stays.
        #expect(try RunReport.decode(merged.jsonData()).hosts == merged.hosts)
    }
}
