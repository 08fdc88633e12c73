import Foundation
import TestServer
import Testing

/// A run's lists go through the run's own engine, host table and settings, and its
/// report's clock covers them (docs/hosts.md#timeouts, docs/reports.md#the-run),
/// through the built binary.
@Suite struct RunClockTests {
    @Test func aListOnAHostThatNeverAnswersObeysTimeoutAndHostGraceAndTheReportCountsIt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for path in ["/rel/SHA256SUMS", "/f.bin"] {
            var route = TestServer.Route(body: [1])
            route.fault = { _ in .silence(seconds: 120) }
            server.set(path, route)
        }
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                defaults: {timeout: 3s, host_grace: 3s}
                sets:
                  - sums: \(server.url("/rel/SHA256SUMS"))
                    dest: rel/
                items:
                  - url: \(server.url("/f.bin"))
                    dest: f.bin

                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let out = outputs(beside: dir)
            let began = Date()
            let arguments = ["sync", path, "--progress", "none", "--report", out + "/r.json", "--metrics", out + "/m.prom"]
            // Two 30 s waits before; the list's 3 s timeout and grace now, give or take
            // a probe and a loaded machine.
            let run = try #require(try await execute(arguments, endingWithin: 40), "the run did not end within 40 s")
            let wall = Date().timeIntervalSince(began)
            #expect(run.status == 1, "\(run.stderr)")
            let report = try loadReport(out + "/r.json")
            let items = report["items"] as? [[String: Any]] ?? []
            let code = { (dest: String) in
                (items.first { $0["dest"] as? String == dest }?["error"] as? [String: Any])?["code"] as? String
            }
            #expect(code("rel/") == "host_down", "\(items)")
            // One host table: the host the list found down costs the item no request.
            #expect(code("f.bin") == "host_down", "\(items)")
            #expect(server.gets("/f.bin").isEmpty)
            // The report's clock starts before the lists: it covers the list's waits.
            let duration = report["duration_s"] as? Double ?? 0
            #expect(duration >= 3 && duration <= wall, "duration_s \(duration), wall \(wall)")
            let metrics = (try? String(contentsOfFile: out + "/m.prom", encoding: .utf8)) ?? ""
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("jgmirror_last_run_duration_seconds") }
            let seconds = line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(seconds >= 3, "\(line ?? "no duration line")")
        }
    }
}
