import Testing

@testable import JGMirror

/// Which index files of a Release a selection mirrors and reads.
@Suite struct AptSelectionTests {
    /// A suite's files as Debian lists them (bookworm's shapes), for main and contrib.
    static let debianPaths: [String] = {
        var paths = ["Contents-amd64.gz", "Contents-arm64.gz", "Contents-udeb-amd64.gz", "Contents-source.gz"]
        for component in ["main", "contrib"] {
            paths += ["\(component)/Contents-all.gz", "\(component)/Contents-amd64.gz", "\(component)/Contents-arm64.gz"]
            paths += ["\(component)/Contents-source.gz", "\(component)/Contents-udeb-amd64.gz"]
            for arch in ["all", "amd64", "arm64"] {
                let folder = "\(component)/binary-\(arch)"
                paths += ["\(folder)/Packages", "\(folder)/Packages.gz", "\(folder)/Packages.xz", "\(folder)/Release"]
                paths += ["\(folder)/Packages.diff/Index", "\(folder)/by-hash/SHA256/" + ReleaseFixture.hash(9)]
            }
            paths += ["\(component)/cnf/Commands-amd64.xz", "\(component)/cnf/Commands-arm64.xz"]
            paths += ["\(component)/dep11/Components-amd64.yml.gz", "\(component)/dep11/Components-arm64.yml.xz"]
            paths += ["\(component)/dep11/CID-Index-amd64.json.gz", "\(component)/dep11/icons-48x48.tar.gz"]
            paths += ["\(component)/i18n/Index", "\(component)/i18n/Translation-en.bz2", "\(component)/i18n/Translation-de.xz"]
            paths += ["\(component)/i18n/Translation-en.diff/Index"]
            paths += ["\(component)/debian-installer/binary-amd64/Packages.xz"]
            paths += ["\(component)/source/Release", "\(component)/source/Sources.xz", "\(component)/source/Sources.gz"]
            paths += ["\(component)/source/Sources.diff/Index"]
        }
        return paths + ["non-free-firmware/binary-amd64/Packages.xz"]
    }()

    private func release(_ paths: [String] = debianPaths, byHash: Bool = true) throws -> AptRelease {
        var release = try AptRelease(parsing: Array(ReleaseFixture.text(paths).utf8), file: "R")
        release.acquireByHash = byHash
        return release
    }

    @Test func oneComponentAndArchitectureTakeWhatAptAsksFor() throws {
        let selection = AptSelection(components: ["main"], architectures: ["amd64"])
        let plan = try selection.plan(try release(), file: "R")
        #expect(
            plan.files.map(\.file.path) == [
                "Contents-amd64.gz", "Contents-udeb-amd64.gz", "main/Contents-all.gz", "main/Contents-amd64.gz",
                "main/Contents-udeb-amd64.gz", "main/binary-all/Packages", "main/binary-all/Packages.gz",
                "main/binary-all/Packages.xz", "main/binary-all/Release", "main/binary-amd64/Packages",
                "main/binary-amd64/Packages.gz", "main/binary-amd64/Packages.xz", "main/binary-amd64/Release",
                "main/cnf/Commands-amd64.xz", "main/dep11/Components-amd64.yml.gz", "main/dep11/CID-Index-amd64.json.gz",
                "main/dep11/icons-48x48.tar.gz", "main/i18n/Index", "main/i18n/Translation-en.bz2",
                "main/i18n/Translation-de.xz",
            ])
        #expect(plan.files.filter { $0.kind == .packages }.count == 6)
        #expect(plan.files.filter { $0.kind == .componentRelease }.allSatisfy { $0.byHash == nil })
        #expect(
            plan.files.first { $0.file.path == "main/binary-amd64/Packages.xz" }?.byHash
                == "main/binary-amd64/by-hash/SHA256/"
                + ReleaseFixture.hash(Self.debianPaths.firstIndex(of: "main/binary-amd64/Packages.xz") ?? 0))
        #expect(plan.packages.map(\.base) == ["main/binary-all/Packages", "main/binary-amd64/Packages"])
        #expect(plan.packages[1].forms.map(\.format) == [.xz, .gzip, .plain])
        #expect(plan.packages[1].plain?.path == "main/binary-amd64/Packages")
        #expect(plan.sources.isEmpty)
    }

    @Test func sourcesAddTheSourcesIndexesAndTheirContents() throws {
        let selection = AptSelection(components: ["main", "contrib"], architectures: ["arm64"], sources: true)
        let plan = try selection.plan(try release(), file: "R")
        #expect(plan.sources.map(\.base) == ["main/source/Sources", "contrib/source/Sources"])
        #expect(plan.sources[0].forms.map(\.format) == [.xz, .gzip])
        #expect(plan.sources[0].plain == nil)
        #expect(plan.files.contains { $0.file.path == "Contents-source.gz" && $0.kind == .contents })
        #expect(plan.files.contains { $0.file.path == "contrib/source/Release" && $0.kind == .componentRelease })
        #expect(!plan.files.contains { $0.file.path.hasSuffix(".diff/Index") || $0.file.path.contains("/by-hash/") })
        #expect(!plan.files.contains { $0.file.path.contains("amd64") || $0.file.path.contains("debian-installer") })
    }

    @Test func aComponentWithASlashIsItsOwnComponent() throws {
        let plan = try AptSelection(components: ["main/debian-installer"], architectures: ["amd64"]).plan(
            try release(["main/debian-installer/binary-amd64/Packages.xz", "main/binary-amd64/Packages.xz"]), file: "R")
        #expect(plan.files.map(\.file.path) == ["main/debian-installer/binary-amd64/Packages.xz"])
    }

    @Test func withoutAcquireByHashThereAreNoByHashCopies() throws {
        let plan = try AptSelection(components: ["main"], architectures: ["amd64"]).plan(try release(byHash: false), file: "R")
        #expect(plan.files.allSatisfy { $0.byHash == nil })
    }

    @Test func identicalFilesInOneFolderShareTheirByHashCopy() throws {
        let text =
            "Acquire-By-Hash: yes\nSHA256:\n \(ReleaseFixture.hash(1)) 0 main/i18n/Translation-en\n"
            + " \(ReleaseFixture.hash(1)) 0 main/i18n/Translation-de\n \(ReleaseFixture.hash(2)) 20 main/binary-amd64/Packages.gz\n"
        let release = try AptRelease(parsing: Array(text.utf8), file: "R")
        let plan = try AptSelection(components: ["main"], architectures: ["amd64"]).plan(release, file: "R")
        #expect(plan.files.count == 3)
        #expect(plan.files.map { $0.byHash != nil } == [true, false, true])
    }

    @Test func whatTheReleaseDoesNotHaveIsRefused() throws {
        let release = try release()
        func refusal(_ selection: AptSelection) -> String? {
            do {
                _ = try selection.plan(release, file: "R")
                return nil
            } catch {
                guard case .notInRelease(_, let reason) = error else { return "\(error)" }
                return reason
            }
        }
        #expect(
            refusal(AptSelection(components: ["non-free"], architectures: ["amd64"]))
                == "has no component 'non-free' (it lists main contrib non-free-firmware)")
        #expect(
            refusal(AptSelection(components: ["main"], architectures: ["riscv64"]))
                == "has no architecture 'riscv64' (it lists all amd64 arm64)")
        #expect(
            refusal(AptSelection(components: ["main"], architectures: ["source"]))
                == "'source' is not an architecture; 'sources: true' mirrors the sources")
        #expect(
            refusal(AptSelection(components: ["non-free-firmware"], architectures: ["arm64"]))
                == "lists no Packages index for components non-free-firmware and architectures arm64 all")
        #expect(
            refusal(AptSelection(components: ["non-free-firmware"], architectures: ["amd64"], sources: true))
                == "lists no Sources index for components non-free-firmware")
        let bz2Only = try AptRelease(
            parsing: Array(ReleaseFixture.text(["main/binary-amd64/Packages.bz2"]).utf8), file: "R")
        #expect(
            throws: AptError.notInRelease(
                file: "R", "lists main/binary-amd64/Packages only in forms jgmirror cannot read (it reads .xz, .gz and plain)")
        ) {
            try AptSelection(components: ["main"], architectures: ["amd64"]).plan(bz2Only, file: "R")
        }
    }

    @Test(arguments: [
        ("main/binary-amd64/Packages.xz", "main/binary-amd64/Packages", CompressionFormat.xz),
        ("main/binary-amd64/Packages.gz", "main/binary-amd64/Packages", .gzip),
        ("main/binary-amd64/Packages", "main/binary-amd64/Packages", .plain),
        ("main/binary-amd64/Packages.zst", "main/binary-amd64/Packages", nil),
        ("main/i18n/Translation-en.bz2", "main/i18n/Translation-en", nil),
    ])
    func formsAreToldByTheirSuffix(path: String, base: String, format: CompressionFormat?) {
        let split = AptSelection.split(path)
        #expect(split.base == base && split.format == format)
    }
}
