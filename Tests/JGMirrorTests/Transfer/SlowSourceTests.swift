import Foundation
import TestServer
import Testing

@testable import JGMirror

/// A source that trickles a byte now and then, through the built binary: every request
/// it is given brings a byte or two, so no single request times out, and the item must
/// still end (docs/engine.md#slow-sources).
@Suite struct SlowSourceTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// 800 bytes, one every 1.2 s: a new request each time the crew sees a second without
    /// a byte, as the field saw it.
    private func trickling(_ path: String) -> [UInt8] {
        let body = (0..<800).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var route = TestServer.Route(body: body)
        route.trickleInterval = 1.2
        server.set(path, route)
        return body
    }

    @Test(arguments: ["", "\nconnections: 1"])
    func anItemWhoseOnlySourceTricklesFailsTooSlow(connections: String) async throws {
        let body = trickling("/t")
        try await withTestDirectory { dir in
            let path = write(
                manifest(url: server.url("/t"), sha256: sha(body), extra: "timeout: 3s\nretries: 1" + connections), to: "m.yaml",
                in: dir)
            let run = try #require(
                try await execute(
                    ["sync", path, "--progress", "none", "--report", outputs(beside: dir) + "/r.json"], endingWithin: 60),
                "the run did not end within 60 s")
            #expect(run.status == 1, "\(run.stderr)")
            let item = try #require((try loadReport(outputs(beside: dir) + "/r.json")["items"] as? [[String: Any]])?.first)
            let error = item["error"] as? [String: Any]
            #expect(error?["code"] as? String == "too_slow", "\(item)")
            #expect((error?["message"] as? String)?.contains("under min_rate") == true, "\(item)")
            #expect(!exists(dir + "/out.bin"))
        }
    }

    @Test func anItemWhosePrimaryTricklesFinishesFromItsMirror() async throws {
        let body = trickling("/t")
        server.set("/m", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let extra = "timeout: 3s\nretries: 1\nmirrors: [\(server.url("/m"))]"
            let path = write(manifest(url: server.url("/t"), sha256: sha(body), extra: extra), to: "m.yaml", in: dir)
            let run = try #require(
                try await execute(["sync", path, "--progress", "none"], endingWithin: 60), "the run did not end within 60 s")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileSHA(dir + "/out.bin") == sha(body))
        }
    }

    @Test func aSetWhoseListTricklesFailsTooSlowAndTheRestGoesOn() async throws {
        let file: [UInt8] = Array("a file".utf8)
        server.set("/f", TestServer.Route(body: file))
        var list = TestServer.Route(body: Array("\(sha(file))  f\n".utf8))
        list.trickleInterval = 1.2
        server.set("/sums/SHA256SUMS", list)
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                defaults: {timeout: 3s, retries: 1}
                sets:
                  - sums: \(server.url("/sums/SHA256SUMS"))
                    dest: set/
                items:
                  - url: \(server.url("/f"))
                    dest: own.bin
                    sha256: \(sha(file))

                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let run = try #require(
                try await execute(
                    ["sync", path, "--progress", "none", "--report", outputs(beside: dir) + "/r.json"], endingWithin: 60),
                "the run did not end within 60 s")
            #expect(run.status == 1, "\(run.stderr)")
            let items = try #require(try loadReport(outputs(beside: dir) + "/r.json")["items"] as? [[String: Any]])
            let codes = items.map { ($0["error"] as? [String: Any])?["code"] as? String }
            #expect(codes.contains("too_slow"), "\(items)")
            #expect(fileSHA(dir + "/own.bin") == sha(file))
        }
    }

    // MARK: The judgment, in virtual time

    /// Feeds `pace` one look per 100 ms for `seconds`, `perLook` bytes from source 0
    /// while `flowing`, a new request every `requestEvery` seconds; returns the first
    /// verdict and when it came.
    private func drive(
        _ pace: inout SourcePace, from start: Double = 0, seconds: Double, perLook: Int64, flowing: Bool = true,
        requestEvery: Double = 1
    ) -> (verdict: SourcePace.Verdict, at: Double)? {
        var now = start
        var nextRequest = start
        while now <= start + seconds {
            let first = now >= nextRequest
            if first { nextRequest += requestEvery }
            if perLook > 0 { pace.received(perLook, from: 0, first: first) }
            if let verdict = pace.look(now: now, flowing: flowing ? [0] : [], floor: { _ in 1024 }).first {
                return (verdict, now)
            }
            now += 0.1
        }
        return nil
    }

    @Test func aTrickleIsJudgedOnceTheWindowIsFull() {
        var pace = SourcePace(window: 5)
        let found = drive(&pace, seconds: 60, perLook: 1)
        let (verdict, at) = try! #require(found)
        #expect(at >= 5 && at < 5.5, "\(at)")
        #expect(verdict.source == 0 && verdict.bytes > 0 && verdict.bytes < 5 * 1024)
        // Reported once.
        #expect(drive(&pace, from: at + 0.1, seconds: 10, perLook: 1) == nil)
    }

    @Test func aSourceAtTheFloorOrSilentIsNotTooSlow() {
        var fast = SourcePace(window: 5)
        #expect(drive(&fast, seconds: 60, perLook: 103) == nil)  // 1,030 bytes a second
        var silent = SourcePace(window: 5)
        #expect(drive(&silent, seconds: 60, perLook: 0) == nil)  // left to the retry policy
    }

    @Test func oneRequestOverTheWholeWindowIsLeftToLibcurlAndTheRetryPolicy() {
        var pace = SourcePace(window: 5)
        #expect(drive(&pace, seconds: 60, perLook: 1, requestEvery: 1000) == nil)
        // Once it is cut and asked again, the trickle across both requests is judged.
        let found = drive(&pace, from: 60.1, seconds: 10, perLook: 1)
        #expect(found.map { $0.at < 60.5 } == true, "\(String(describing: found))")
    }

    @Test func aSourceWhoseNewRequestFlowsFastIsNotCutForTheSlowOneBefore() {
        var pace = SourcePace(window: 5)
        #expect(drive(&pace, seconds: 4.9, perLook: 1, requestEvery: 1000) == nil)
        // A retry that flows at 20 kB/s: the window as a whole is under the floor, its
        // last quarter is not.
        #expect(drive(&pace, from: 5, seconds: 3, perLook: 2000, requestEvery: 1000) == nil)
    }

    @Test func timeWithoutAFlowingResponseDoesNotCount() {
        var pace = SourcePace(window: 5)
        // Trickling bytes, but no response flowing (waiting for a slot or a host): no
        // time counts, so nothing is judged however long it lasts.
        #expect(drive(&pace, seconds: 60, perLook: 1, flowing: false) == nil)
        let found = drive(&pace, from: 60, seconds: 10, perLook: 1)
        #expect(found.map { $0.at >= 65 } == true, "\(String(describing: found))")
    }
}
