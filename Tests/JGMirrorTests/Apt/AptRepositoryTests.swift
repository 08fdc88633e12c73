import Foundation
import Testing

@testable import JGMirror

/// A real signed repository, built at test time by `scripts/apt-repo.sh` with Debian's
/// own tools (dpkg-deb, apt-ftparchive, gpg), read end to end with the Apt units.
@Suite struct AptRepositoryTests {
    /// Runs the script's `command` on the repository in `folder`.
    private func script(_ command: String, _ folder: String, _ arguments: [String] = []) async throws {
        try await AptUpstream.run(command, on: folder, arguments)
    }

    /// What a set reads of the suite in `folder`: the verified Release, its plan, and the pool files.
    private func read(_ folder: String, held: AptRelease? = nil, sources: Bool = true) async throws
        -> (AptRelease, AptIndexPlan, AptPool)
    {
        let dists = folder + "/repo/dists/testing"
        let text = try await AptSignature.verifyInRelease(
            path: dists + "/InRelease", keyring: folder + "/keyring.gpg", file: "dists/testing/InRelease")
        let release = try AptRelease(parsing: text, file: "dists/testing/InRelease")
        #expect(release.names(suite: "testing"))
        if let problem = ReleaseFreshness.problem(held: held, new: release, now: Int64(Date().timeIntervalSince1970), file: "R") {
            throw problem
        }
        let plan = try AptSelection(components: ["main", "contrib"], architectures: ["amd64"], sources: sources).plan(
            release, file: "dists/testing/InRelease")
        var pool = AptPool()
        for (readable, isSources) in plan.packages.map({ ($0, false) }) + plan.sources.map({ ($0, true) }) {
            // The first form on disk, as a fetch falls back from a missing one.
            let form = try #require(readable.forms.first { FileManager.default.fileExists(atPath: dists + "/" + $0.file.path) })
            let name = "dists/testing/" + form.file.path
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dists + "/" + form.file.path)))
            let index = try readable.read(bytes, format: form.format, name: name)
            pool.add(
                isSources ? try AptPoolFile.sources(index, file: name) : try AptPoolFile.packages(index, file: name), from: name)
        }
        return (release, plan, pool)
    }

    /// Every file of the pool on disk, relative to the repository.
    private func poolOnDisk(_ folder: String) -> Set<String> {
        let pool = folder + "/repo/pool"
        let names = FileManager.default.enumerator(atPath: pool)?.compactMap { $0 as? String } ?? []
        return Set(names.filter { !$0.hasSuffix("/") && !isFolder(pool + "/" + $0) }.map { "pool/" + $0 })
    }

    private func isFolder(_ path: String) -> Bool {
        var folder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
    }

    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func aGeneratedRepositoryReadsEndToEnd() async throws {
        try await withTestDirectory { dir in
            let folder = dir + "/r"
            try await script("create", folder, ["--packages", "9", "--size", "1"])
            let (release, plan, pool) = try await read(folder)
            #expect(release.acquireByHash && release.components == ["main", "contrib"])
            #expect(plan.packages.count == 4 && plan.sources.count == 2)
            #expect(pool.conflicts.isEmpty)
            // The indexes name exactly the pool: every .deb, .dsc and tarball, with its bytes.
            #expect(Set(pool.files.map(\.path)) == poolOnDisk(folder))
            for file in pool.files {
                let path = folder + "/repo/" + file.path
                #expect(fileSHA(path) == file.sha256, "\(file.path)")
                #expect((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int).map(Int64.init) == file.size)
            }
            // Every by-hash copy apt would ask for is there, with the index's bytes.
            let dists = folder + "/repo/dists/testing/"
            for index in plan.files {
                #expect(fileSHA(dists + index.file.path) == index.file.sha256, "\(index.file.path)")
                if let byHash = index.byHash { #expect(fileSHA(dists + byHash) == index.file.sha256, "\(byHash)") }
            }
            // Release + Release.gpg carry the same text InRelease signs.
            let detached = try await AptSignature.verifyDetached(
                path: dists + "Release", signature: dists + "Release.gpg", keyring: folder + "/keyring.asc", file: "R")
            #expect(try AptRelease(parsing: detached, file: "R") == release)
        }
    }

    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func theNextGenerationsAndEachTamperingAreToldApart() async throws {
        try await withTestDirectory { dir in
            let folder = dir + "/r"
            try await script("create", folder, ["--packages", "6", "--size", "1", "--no-sources"])
            let first = try await read(folder, sources: false).0
            try await script("next", folder)
            let (second, _, pool) = try await read(folder, held: first, sources: false)
            #expect((second.date ?? 0) > (first.date ?? 0))
            #expect(!pool.files.contains { $0.path.contains("jgtest006") }, "the removed package is gone")
            #expect(pool.files.contains { $0.path.hasSuffix("jgtest007_1.2_amd64.deb") }, "the added one is there")

            // The first generation's Release, served again: a replay.
            try await script("replay", folder)
            await #expect(throws: AptError.replayed(file: "R", date: first.date ?? 0, held: second.date ?? 0)) {
                _ = try await read(folder, held: second, sources: false)
            }
            try await script("next", folder)
            try await script("tamper-index", folder)
            do {
                _ = try await read(folder, sources: false)
                Issue.record("a Packages.xz that differs from Release was read")
            } catch let error as AptError {
                guard case .mismatch(let file, _) = error else { throw error }
                #expect(file == "dists/testing/main/binary-amd64/Packages.xz")
            }
            try await script("other-key", folder)
            await #expect(throws: AptError.self) { _ = try await read(folder, sources: false) }
        }
    }

    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func anExpiredReleaseIsRefused() async throws {
        try await withTestDirectory { dir in
            let folder = dir + "/r"
            try await script("create", folder, ["--packages", "2", "--size", "1", "--no-sources", "--valid-for", "-60"])
            do {
                _ = try await read(folder, sources: false)
                Issue.record("a Release past its Valid-Until was taken")
            } catch let error as AptError {
                guard case .expired(let file, let validUntil, let now) = error else { throw error }
                #expect(file == "R" && validUntil < now)
            }
        }
    }
}
