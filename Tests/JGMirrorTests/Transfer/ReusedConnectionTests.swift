import Foundation
import TestServer
import Testing

/// What a response leaves on a kept-alive connection past its announced length (a
/// length lie) is read as the start of the next response there: that request is asked
/// once more on a connection of its own before its failure counts
/// (docs/engine.md#retries), through the built binary.
@Suite struct ReusedConnectionTests {
    @Test func aProtocolErrorOnAReusedConnectionIsAskedAgainOnAFreshOne() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let lying = TestServer.bytes(count: 1000, seed: 1)
        var lie = TestServer.Route(body: lying)
        // More than the 100 KiB libcurl takes as a response head.
        lie.extraBytesLater = 200_000
        server.set("/lie", lie)
        let next = TestServer.bytes(count: 1000, seed: 2)
        server.set("/next", TestServer.Route(body: next))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                defaults: {connections: 1, retries: 6}
                items:
                  - {url: \(server.url("/lie")), dest: lie.bin, sha256: \(sha(lying))}
                  - {url: \(server.url("/next")), dest: next.bin, sha256: \(sha(next))}

                """
            let path = write(yaml, to: "m.yaml", in: dir)
            // One item at a time, so that the second reuses the first one's connection.
            let run = try await execute(["sync", path, "--jobs", "1", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileSHA(dir + "/next.bin") == sha(next))
            // Asked on the first connection, then on a new one.
            #expect(server.gets("/next").map(\.connection).count == 2, "\(server.gets("/next").map(\.connection))")
        }
    }
}
