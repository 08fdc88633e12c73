import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Links placed in one run lead nowhere outside the root nor into `.jgmirror`
/// (issue 41, point 7), through the built binary: what the manifest's links do
/// together is a manifest error; what a symlink on disk adds fails that link alone
/// (`unsafe_path`); a link an older version placed that leads out is removed by the
/// next run, so the tree is never stuck with it.
@Suite struct LinkConfinementTests {
    let server: TestServer
    let body = TestServer.bytes(count: 3000, seed: 71)

    init() throws {
        server = try TestServer()
        server.set("/f.bin", TestServer.Route(body: body))
    }

    /// A manifest with root `mirror`: one file, then `links` (`dest: target`) in order.
    func manifest(_ links: [(String, String)]) -> String {
        var text = "version: 1\nroot: mirror\nitems:\n"
        text += "  - {url: \(server.url("/f.bin")), dest: a/f.bin, sha256: \(sha(body))}\n"
        for (dest, target) in links { text += "  - link: \"\(target)\"\n    dest: \(dest)\n" }
        return text
    }

    @Test(arguments: [
        (
            [("rel/up", ".."), ("esc", "rel/up/..")], [String](),
            "m.yaml:7:11: link target 'rel/up/..' of 'esc' leaves the root through the link 'rel/up'"
        ),
        (
            [("a/up", ".."), ("esc2", "a/up/../..")], ["--publish", "snapshot"],
            "m.yaml:7:11: link target 'a/up/../..' of 'esc2' leaves the root through the link 'a/up'"
        ),
        (
            [("a/up", ".."), ("state", "a/up/.jgmirror")], [],
            "m.yaml:7:11: link target 'a/up/.jgmirror' of 'state' leads into jgmirror's state folder .jgmirror"
        ),
    ])
    func linksThatLeadOutTogetherAreAManifestError(links: [(String, String)], options: [String], expected: String)
        async throws
    {
        try await withTestDirectory { dir in
            let path = write(manifest(links), to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none"] + options)
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains(expected), "\(run.stderr)")
            #expect(server.requests().isEmpty)
            for (dest, _) in links { #expect(target(dir + "/mirror/" + dest) == nil) }
            let plan = try await execute(["plan", path])
            #expect(plan.status == 2 && plan.stderr.contains(expected), "\(plan.stderr)")
        }
    }

    /// A symlink on disk that leads out is no fault of the manifest: the link through
    /// it fails alone (exit 4), the rest of the run goes on.
    @Test func aLinkLeadingOutThroughASymlinkOnDiskFailsAloneAsUnsafePath() async throws {
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/mirror/out", withDestinationPath: "..")
            let path = write(manifest([("latest", "out/m.yaml"), ("fine", "a/f.bin")]), to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--report", dir + "/r.json", "--progress", "none"])
            #expect(run.status == 4, "\(run.stderr)")
            let rows = try loadReport(dir + "/r.json")["items"] as? [[String: Any]] ?? []
            let refused = try #require(rows.first { $0["dest"] as? String == "latest" })
            let error = refused["error"] as? [String: Any]
            #expect(error?["code"] as? String == "unsafe_path")
            #expect((error?["message"] as? String)?.contains("leaves the root through the link 'out'") == true, "\(refused)")
            #expect(target(dir + "/mirror/latest") == nil)
            #expect(target(dir + "/mirror/fine") == "a/f.bin" && fileSHA(dir + "/mirror/a/f.bin") == sha(body))
        }
    }

    /// An older version placed `esc -> rel/up/..` (or, in a snapshot, `esc2 ->
    /// a/up/../..`, into `.jgmirror`); the manifest no longer names it. The next run,
    /// without `--delete`, removes it and says so; in a snapshot tree it publishes a
    /// snapshot without it.
    @Test(arguments: [false, true])
    func aLinkAnOlderVersionPlacedThatLeadsOutIsRemoved(snapshot: Bool) async throws {
        try await withTestDirectory { dir in
            let (dest, bad) = snapshot ? ("esc2", "a/up/../..") : ("esc", "rel/up/..")
            let up = snapshot ? "a/up" : "rel/up"
            let options = ["--progress", "none"] + (snapshot ? ["--publish", "snapshot"] : [])
            let path = write(manifest([(up, ".."), (dest, "a")]), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path] + options).status == 0)
            // What the older version left: the link, and its record.
            let tree = dir + "/mirror" + (snapshot ? "/current" : "")
            let placed = tree + "/" + dest
            try FileManager.default.removeItem(atPath: placed)
            try FileManager.default.createSymbolicLink(atPath: placed, withDestinationPath: bad)
            let store = try #require(StateStore.openExisting(root: dir + "/mirror"))
            store.saveLinks([(dest, bad)])
            store.close()
            write(manifest([(up, "..")]), to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--report", dir + "/r.json"] + options)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(target(dir + "/mirror" + (snapshot ? "/current" : "") + "/" + dest) == nil)
            let rows = try loadReport(dir + "/r.json")["items"] as? [[String: Any]] ?? []
            let removed = try #require(rows.first { $0["dest"] as? String == dest }, "\(rows)")
            #expect(removed["status"] as? String == "deleted")
            #expect((removed["note"] as? String)?.contains("through the link '\(up)'") == true, "\(removed)")
            #expect(target(dir + "/mirror" + (snapshot ? "/current" : "") + "/" + up) == "..")
            // Nothing left to repair: the run after it changes nothing.
            #expect(try await execute(["sync", path] + options).status == 0)
        }
    }
}

/// `LinkResolver` as a pure value: links planned, links on disk, set folders.
@Suite struct LinkResolverTests {
    func outcome(_ resolver: LinkResolver, _ target: String, from dest: String) -> LinkResolver.Outcome {
        var via: [String] = []
        return resolver.resolve(target, from: dest, via: &via)
    }

    @Test func targetsAreFollowedThroughPlannedLinksThenTheDisk() {
        let disk = ["d/abs": "/srv/mirror/a", "d/out": "/etc", "d/loop": "loop2", "d/loop2": "loop"]
        var resolver = LinkResolver(planned: ["rel/up": "..", "d/abs": "b"], folders: ["set"], root: "/srv/mirror") {
            disk[$0]
        }
        #expect(outcome(resolver, "rel/up/x", from: "l") == .inside("x"))
        #expect(outcome(resolver, "up/..", from: "rel/l") == .outside)
        #expect(outcome(resolver, "up/.jgmirror/state.sqlite", from: "rel/l") == .stateFolder)
        // A planned link stands for what is on disk at its place.
        #expect(outcome(resolver, "abs/c", from: "d/l") == .inside("d/b/c"))
        resolver.planned["d/abs"] = nil
        #expect(outcome(resolver, "abs/c", from: "d/l") == .inside("a/c"))
        #expect(outcome(resolver, "out", from: "d/l") == .outside)
        #expect(outcome(resolver, "loop", from: "d/l") == .loop)
        // A set's own folder is a folder, whatever link jgmirror keeps there.
        #expect(outcome(resolver, "set/x", from: "l") == .inside("set/x"))
        #expect(resolver.problem("loop", of: "d/l") == nil)
        #expect(
            resolver.problem("rel/up/..", of: "esc")
                == "link target 'rel/up/..' of 'esc' leaves the root through the link 'rel/up'")
    }
}
