import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Issue 14, reliability: bodies without a bound, encodings, destinations that cannot
/// be files, and messages that name what went wrong. Library-level; the command-line
/// side is in `HardeningEndToEndTests`.
@Suite struct HardeningTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    private func only(_ report: RunReport) throws -> ItemResult { try #require(report.items.first) }

    private func manifestError(_ yaml: String, options: ManifestOptions = ManifestOptions()) -> ManifestError? {
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml", options: options)
            return nil
        } catch { return error }
    }

    // MARK: 4. Bodies without a known length

    @Test(arguments: ["endless", "close-delimited"])
    func maxSizeCutsOffABodyOfUnknownLength(kind: String) async throws {
        var route = TestServer.Route(body: TestServer.bytes(count: 4 << 20, seed: 1))
        if kind == "endless" { route.endless = true } else { route.noLength = true }
        server.set("/u", route)
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/u"), extra: "max_size: 1MiB\nconnections: 1"), in: dir)
            let item = try only(report)
            #expect(item.status == .failed)
            #expect(item.error?.code.rawValue == "too_large", "\(String(describing: item.error))")
            #expect(item.error?.message.contains("max_size") == true)
            #expect(report.exitCode == .transferFailed)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    @Test func maxSizeFromDefaultsRefusesAnAnnouncedLargerBody() async throws {
        server.set("/big", TestServer.Route(body: TestServer.bytes(count: 3 << 20, seed: 2), etag: "\"b\""))
        try await withTestDirectory { dir in
            let yaml = "version: 1\ndefaults: {max_size: 1MiB}\nitems:\n  - {url: \(server.url("/big")), dest: out.bin}\n"
            let item = try only(try await sync(yaml, in: dir))
            #expect(item.error?.code.rawValue == "too_large", "\(String(describing: item.error))")
            #expect(item.bytesDownloaded <= 1 << 20)
            #expect(!exists(dir + "/mirror/out.bin"))
        }
    }

    @Test func minFreeStopsAnEndlessBodyAsDiskFull() async throws {
        var route = TestServer.Route(body: [])
        route.endless = true
        server.set("/e", route)
        try await withTestDirectory { dir in
            // A file system with 6 MiB available before the download: it may use 2 of them.
            var options = testOptions()
            options.minFree = 4 << 20
            options.engine.freeSpace = { fd in
                var info = stat()
                guard fstat(fd, &info) == 0 else { return nil }
                return SpaceGuard.FreeSpace(available: (6 << 20) - Int64(info.st_size), total: 1 << 40)
            }
            let report = try await sync(manifest(url: server.url("/e"), extra: "connections: 1"), in: dir, options: options)
            let item = try only(report)
            #expect(item.status == .failed)
            #expect(item.error?.code.rawValue == "disk_full", "\(String(describing: item.error))")
            #expect(item.error?.message.contains("--min-free") == true)
            #expect(report.exitCode == .local)
            #expect(item.bytesDownloaded <= 2 << 20)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    /// An announced length that would not leave `--min-free` is refused before a
    /// block is reserved or a byte written, and nothing is left behind to hold space
    /// (a disk filled by a failed reservation would stay full until the next run).
    @Test(arguments: [false, true])
    func aLengthTheDiskCannotHoldIsRefusedBeforeReservingAnything(sizeInManifest: Bool) async throws {
        let body = TestServer.bytes(count: 4 << 20, seed: 3)
        server.set("/big", TestServer.Route(body: body, etag: "\"big\""))
        try await withTestDirectory { dir in
            var options = testOptions()
            options.minFree = 1 << 20
            let probed = Locked(0)
            options.engine.freeSpace = { _ in
                probed.withLock { $0 += 1 }
                return SpaceGuard.FreeSpace(available: 4 << 20, total: 1 << 40)
            }
            let extra = "connections: 4\nmin_segment: 256KiB" + (sizeInManifest ? "\nsize: \(4 << 20)" : "")
            let report = try await sync(manifest(url: server.url("/big"), extra: extra), in: dir, options: options)
            let item = try only(report)
            #expect(item.error?.code.rawValue == "disk_full", "\(String(describing: item.error))")
            #expect(item.error?.message.contains("cannot reserve 4.0 MiB") == true, "\(String(describing: item.error))")
            #expect(item.error?.message.contains("--min-free") == true)
            #expect(report.exitCode == .local && probed.value > 0, "\(report.exitCode)")
            // Regions asked for at once (the manifest's size) may bring a few bytes
            // before the first answer's length is refused; none is kept.
            #expect(item.bytesDownloaded < Int64(body.count) / 2, "\(item.bytesDownloaded)")
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
            #expect(!exists(dir + "/mirror/out.bin.jgd"))
            // With room for it (and the reserve), the same file is fetched.
            options.engine.freeSpace = { _ in SpaceGuard.FreeSpace(available: 6 << 20, total: 1 << 40) }
            let again = try await sync(manifest(url: server.url("/big"), extra: extra), in: dir, options: options)
            #expect(try only(again).status == .unverified, "\(again.items)")
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    @Test func defaultReserveIsOneGiBOrOnePercent() {
        #expect(SpaceGuard.defaultReserve(total: 1 << 40) == 1 << 30)
        #expect(SpaceGuard.defaultReserve(total: 10 << 30) == (10 << 30) / 100)
        // A 10 GiB file system with 150 MiB available keeps 102.4 MiB: about 47 MiB may be written.
        let written = Locked<Int64>(0)
        var spaceGuard = SpaceGuard(minFree: nil) { _ in
            SpaceGuard.FreeSpace(available: (150 << 20) - written.withLock { $0 }, total: 10 << 30)
        }
        while spaceGuard.admit(1 << 20, fd: -1, path: "p") == nil, written.withLock({ $0 }) < 200 << 20 {
            written.withLock { $0 += 1 << 20 }
        }
        #expect(written.withLock { $0 } == 47 << 20)
    }

    // MARK: 5. Encodings

    @Test func acceptEncodingInManifestHeadersIsAnError() {
        let yaml = "version: 1\ndefaults:\n  headers:\n    accept-encoding: gzip\nitems:\n  - url: http://h/a\n"
        let error = manifestError(yaml)
        #expect(
            error?.errorDescription?.hasPrefix("m.yaml:4:5: header 'accept-encoding' cannot be set") == true,
            "\(String(describing: error))")
        #expect(error?.message.contains("byte for byte") == true)
    }

    @Test func bodyLabelledContentEncodingIsStoredByteForByte() async throws {
        // gzip of "hello, jgmirror\n" × 3: what the server sends is the file.
        let gzip: [UInt8] = [
            31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 203, 72, 205, 201, 201, 215, 81, 200, 74, 207, 205, 44, 42, 202, 47, 226, 202, 32,
            192, 7, 0, 230, 67, 90, 218, 48, 0, 0, 0,
        ]
        var route = TestServer.Route(body: gzip, etag: "\"g\"")
        route.extraHeaders = ["Content-Encoding: gzip", "Content-Type: application/gzip"]
        server.set("/f.tar.gz", route)
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f.tar.gz"), sha256: sha(gzip)), in: dir)
            #expect(try only(report).status == .downloaded, "\(report.items)")
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(gzip))
            #expect(server.requests("/f.tar.gz").allSatisfy { $0.headers["accept-encoding"] == nil })
        }
    }

    // MARK: 6. Destinations that cannot be files

    @Test(arguments: [
        ("  - {url: http://h/a, dest: x}\n  - {url: http://h/b, dest: x/y}\n", "m.yaml:4:29: destination 'x/y' lies inside 'x'"),
        (
            "  - {url: http://h/a, dest: x}\n  - {url: http://h/b, dest: x.jgpart/y}\n",
            "m.yaml:4:29: destination 'x.jgpart/y' uses a name jgmirror reserves"
        ),
        ("  - {url: http://h/b, dest: q.jgd/y}\n", "m.yaml:3:29: destination 'q.jgd/y' uses a name jgmirror reserves"),
        ("  - {url: http://h/a, dest: \(String(repeating: "n", count: 300))/f}\n", "m.yaml:3:29: destination name 'nnnn"),
        ("  - {url: http://h/a, dest: d/\(String(repeating: "n", count: 250))}\n", "is 250 bytes long; file systems take 247"),
        ("  - {url: LONG-URL}\n", "m.yaml:3:11: URL is 70009 bytes long; jgmirror accepts at most 65536"),
        (
            "  - {url: http://h/a, headers: {Range: bytes=0-1}}\n",
            "m.yaml:3:33: header 'Range' cannot be set: jgmirror asks for byte ranges itself"
        ),
        ("  - {url: http://h/a, headers: {If-None-Match: x}}\n", "m.yaml:3:33: header 'If-None-Match' cannot be set"),
        ("  - {url: http://h/a, headers: {Host: other}}\n", "m.yaml:3:33: header 'Host' cannot be set"),
    ])
    func destinationOrHeaderThatCannotWorkIsAManifestError(items: String, expected: String) {
        let longURL = "http://h/" + String(repeating: "u", count: 70_000)
        let error = manifestError("version: 1\nitems:\n" + items.replacingOccurrences(of: "LONG-URL", with: longURL))
        #expect(
            error?.errorDescription?.contains(expected) == true, "\(String(describing: error?.errorDescription?.prefix(300)))")
    }

    @Test func namesThatDifferOnlyInCaseWarnOrFailWithPortableNames() throws {
        let yaml =
            "version: 1\nitems:\n  - {url: http://h/a, dest: d/A.bin}\n  - {url: http://h/b, dest: D/x}\n  - {url: http://h/c, dest: d/a.bin}\n"
        let manifest = try Manifest.parse(yaml, name: "m.yaml")
        // Folders that differ in case merge into one there, which harms no file.
        #expect(
            manifest.warnings.map { $0.errorDescription ?? "" } == [
                "m.yaml:5:29: destination 'd/a.bin' and 'd/A.bin' (line 3) are the same file on a case-insensitive file system (macOS, Windows) (--portable-names makes this an error)"
            ])
        var options = ManifestOptions()
        options.portableNames = true
        #expect(manifestError(yaml, options: options)?.errorDescription?.hasPrefix("m.yaml:5:29: destination 'd/a.bin'") == true)
        // A file and a folder that differ in case collide too, in either order and case.
        let pairs = [
            ("x", "X/y", "the folder 'X' of destination 'X/y' is the same name as 'x' (line 3)"),
            ("X", "x/y", "the folder 'x' of destination 'x/y' is the same name as 'X' (line 3)"),
            ("x/y", "X", "destination 'X' is the same name as the folder 'x' of another item"),
            ("X/y", "x", "destination 'x' is the same name as the folder 'X' of another item"),
            ("a.bin", "A.BIN", "destination 'A.BIN' and 'a.bin' (line 3) are the same file"),
            ("A.bin", "A.BIN", "destination 'A.BIN' and 'A.bin' (line 3) are the same file"),
        ]
        for (first, second, message) in pairs {
            let yaml = "version: 1\nitems:\n  - {url: http://h/a, dest: \(first)}\n  - {url: http://h/b, dest: \(second)}\n"
            let description = manifestError(yaml, options: options)?.errorDescription ?? ""
            #expect(description.contains(message), "\(first), \(second): \(description)")
        }
        // Folders that differ only in case, and names that differ otherwise, are fine;
        // so is a name that folding leaves as it is (non-ASCII, no upper case), which
        // once clashed with itself.
        let fine =
            "version: 1\nitems:\n  - {url: http://h/a, dest: D/a}\n  - {url: http://h/b, dest: d/b}\n  - {url: http://h/c, dest: e}\n"
            + "  - {url: http://h/d, dest: café.txt}\n  - {url: http://h/e, dest: 日本語/a.txt}\n  - {url: http://h/f, dest: ß/x}\n"
        #expect(manifestError(fine, options: options) == nil)
        #expect(try Manifest.parse(fine, name: "m.yaml").warnings.isEmpty)
        // Non-ASCII names that differ only in case still clash.
        let accented = "version: 1\nitems:\n  - {url: http://h/a, dest: café/x}\n  - {url: http://h/b, dest: CAFÉ}\n"
        #expect(
            manifestError(accented, options: options)?.errorDescription?.contains(
                "destination 'CAFÉ' is the same name as the folder 'café' of another item") == true)
    }

    @Test func destinationThatIsAnExistingFolderFailsBeforeAnyRequest() async throws {
        server.set("/a", TestServer.Route(body: [1, 2, 3]))
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror/out.bin", withIntermediateDirectories: true)
            await #expect {
                _ = try await sync(manifest(url: server.url("/a")), in: dir)
            } throws: { error in
                (error as? SyncError)?.errorDescription?.contains(
                    "manifest.yaml:3:5: destination 'out.bin' is an existing folder") == true
                    && (error as? SyncError)?.exitCode == .usage
            }
            #expect(server.requests().isEmpty)
            #expect(!exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    @Test func pathLongerThanPathMaxUnderTheRootFailsBeforeAnyRequest() async {
        server.set("/a", TestServer.Route(body: [1, 2, 3]))
        await withTestDirectory { dir in
            let dest = (0..<21).map { _ in String(repeating: "p", count: 200) }.joined(separator: "/") + "/f"
            await #expect {
                _ = try await sync("version: 1\nitems:\n  - url: \(server.url("/a"))\n    dest: \(dest)\n", in: dir)
            } throws: { error in
                (error as? SyncError)?.errorDescription?.contains("Linux takes at most 4095") == true
            }
            #expect(server.requests().isEmpty)
        }
    }

    // MARK: 7. get -o

    @Test func getIntoAFolderKeepsTheURLsFileName() throws {
        try withTestDirectorySync { dir in
            try FileManager.default.createDirectory(atPath: dir + "/existing", withIntermediateDirectories: true)
            let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path
            let cases = [
                (".", cwd), (dir + "/sub/", dir + "/sub"), (dir + "/existing", dir + "/existing"),
                (dir + "/existing/", dir + "/existing"),
            ]
            for (output, folder) in cases {
                let (root, name) = try Download.split(output, url: "http://h/dir/file.iso?x=1")
                #expect(root == URL(fileURLWithPath: folder).standardizedFileURL.path, "\(output)")
                #expect(name == "file.iso", "\(output)")
            }
            let (root, name) = try Download.split(dir + "/new.bin", url: "http://h/dir/file.iso")
            #expect(root == URL(fileURLWithPath: dir).standardizedFileURL.path && name == "new.bin")
        }
    }

    @Test func getRefusesAnEmptyOutputAndReservedNames() {
        #expect(throws: UsageError.self) { _ = try Download(url: "http://h/a", destination: "").session() }
        #expect { _ = try Download(url: "http://h/a", destination: "x.jgpart").session() } throws: {
            ($0 as? UsageError)?.message.contains("reserves") == true
        }
        var download = Download(url: "http://h/a", destination: "a")
        download.headers = [HTTPHeader(name: "Accept-Encoding", value: "gzip")]
        #expect { _ = try download.session() } throws: { ($0 as? UsageError)?.message.contains("byte for byte") == true }
    }

    // MARK: 8. Selections of nothing

    @Test func tagFilterThatSelectsNothingNamesTheManifestsTags() throws {
        let yaml = "version: 1\nitems:\n  - {url: http://h/a, tags: [iso, big]}\n  - {url: http://h/b, tags: [small]}\n"
        let manifest = try Manifest.parse(yaml)
        var options = PlanOptions()
        options.tags = ["nosuch"]
        let plan = Plan(manifest: manifest, options: options)
        #expect(
            plan.emptySelection?.message
                == "--tag nosuch selects no item (no item has the tag nosuch); the manifest's tags are: big, iso, small")
        options.tags = ["iso"]
        #expect(Plan(manifest: try Manifest.parse(yaml), options: options).emptySelection == nil)
        // An empty shard is not an error.
        options.tags = []
        options.shard = try Shard(index: 0, count: 50)
        let sharded = Plan(manifest: try Manifest.parse(yaml), options: options)
        #expect(sharded.emptySelection == nil)
    }

    // MARK: Messages

    @Test func manifestThatIsAFolderSaysSo() {
        withTestDirectorySync { dir in
            #expect { _ = try Manifest.load(path: dir) } throws: {
                ($0 as? ManifestError)?.errorDescription == "\(dir): is a folder, not a manifest; give the path of the YAML file"
            }
        }
    }

    @Test func invalidUTF8IsReportedAtItsLineAndColumn() {
        withTestDirectorySync { dir in
            let path = dir + "/m.yaml"
            _ = FileManager.default.createFile(
                atPath: path,
                contents: Data("version: 1\nitems:\n  - url: http://h/a\n    dest: \"äb".utf8) + Data([0xFF, 0x22, 0x0A]))
            #expect { _ = try Manifest.load(path: path) } throws: {
                ($0 as? ManifestError)?.errorDescription?.hasPrefix("\(path):4:14: the manifest must be UTF-8 text") == true
            }
        }
    }

    @Test func garbageReplyIsAProtocolError() async throws {
        var route = TestServer.Route(body: [1])
        route.fault = { _ in .raw(Array("SSH-2.0-OpenSSH_9.6\r\n".utf8)) }
        server.set("/g", route)
        try await withTestDirectory { dir in
            let item = try only(try await sync(manifest(url: server.url("/g"), extra: "retries: 0"), in: dir))
            #expect(item.error?.code.rawValue == "protocol", "\(String(describing: item.error))")
            #expect(item.error?.message.contains("did not answer with HTTP") == true, "\(String(describing: item.error))")
        }
    }

    @Test func hugeResponseHeaderIsNamed() async throws {
        var route = TestServer.Route(body: [1, 2, 3])
        route.extraHeaders = ["X-Big: " + String(repeating: "b", count: 2 << 20)]
        server.set("/h", route)
        try await withTestDirectory { dir in
            let item = try only(try await sync(manifest(url: server.url("/h"), extra: "retries: 0"), in: dir))
            #expect(item.error?.code.rawValue == "protocol", "\(String(describing: item.error))")
            #expect(item.error?.message.contains("response header") == true, "\(String(describing: item.error))")
            #expect(item.error?.message.contains("Out of memory") == false)
        }
    }

    @Test func verifySaysWhatStandsWhereAFileShouldBe() async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nitems:\n  - url: http://h/a\n    dest: fifo\n", to: "m.yaml", in: dir)
            #expect(mkfifo(dir + "/fifo", 0o644) == 0)
            let report = try await Verification.run(plan: Plan(manifest: try Manifest.load(path: path)))
            #expect(report.items.first?.error?.message.contains("is a FIFO, not a regular file") == true, "\(report.items)")
            try FileManager.default.removeItem(atPath: dir + "/fifo")
            try FileManager.default.createDirectory(atPath: dir + "/fifo", withIntermediateDirectories: true)
            await #expect { _ = try await Verification.run(plan: Plan(manifest: try Manifest.load(path: path))) } throws: {
                ($0 as? SyncError)?.errorDescription?.contains("destination 'fifo' is an existing folder") == true
            }
        }
    }

    @Test func redirectToARefusedPortNamesTheURLItFailedAt() async throws {
        var route = TestServer.Route(body: [])
        route.redirect = "http://127.0.0.1:1/moved.bin"
        server.set("/r", route)
        try await withTestDirectory { dir in
            let item = try only(try await sync(manifest(url: server.url("/r"), extra: "retries: 0"), in: dir))
            #expect(item.error?.code.rawValue == "connect")
            #expect(item.error?.message.contains("http://127.0.0.1:1/moved.bin") == true, "\(String(describing: item.error))")
            #expect(item.error?.message.contains(server.url("/r")) == true)
        }
    }

    @Test func controlCharactersFromAURLAreEscapedInMessages() {
        let error = manifestError("version: 1\nitems:\n  - url: http://h/a%00b%1B[31m\n")
        let text = error?.errorDescription ?? ""
        #expect(text.contains("a\\x00b\\x1b[31m"), "\(text)")
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 })
    }

    @Test func ratesAndSizesTakeUnitsInAnyCase() {
        #expect(Units.parseRate("1k") == 1024)
        #expect(Units.parseRate("1K") == 1024)
        #expect(Units.parseRate("20m") == 20 << 20)
        #expect(Units.parseRate("1.5MiB/s") == 3 << 19)
        #expect(Units.parseRate("2gb") == 2_000_000_000)
        #expect(Units.parseSize("1kib") == 1024)
        #expect(Units.parseRate("fast") == nil)
    }

    @Test func runLevelErrorCodesSayWhatHappened() {
        #expect(SyncError.manifest(ManifestError(file: "m", location: nil, message: "x")).itemError.code.rawValue == "manifest")
        #expect(SyncError.usage(UsageError("x")).itemError.code.rawValue == "usage")
        #expect(SyncError.locked("p").itemError.code.rawValue == "locked")
        #expect(SyncError.local("x").itemError.code.rawValue == "local")
    }
}

/// The on-disk confinement check (docs/safety.md#confinement-to-the-root) on a first run, when the
/// root and the folders below it do not exist yet.
@Suite struct RootConfinementTests {
    @Test func aRootNotMadeYetReachedThroughDotDotHoldsItsItems() throws {
        try withTestDirectorySync { dir in
            try FileManager.default.createDirectory(atPath: dir + "/manifests", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
            for root in ["../out/mirror", "../missing/deeper/mirror", "../out/./x/../mirror"] {
                let path = dir + "/manifests/m.yaml"
                try "version: 1\nroot: \(root)\nitems:\n  - {url: 'https://h/a.bin', dest: isos/a.bin}\n"
                    .write(toFile: path, atomically: true, encoding: .utf8)
                let plan = Plan(manifest: try Manifest.load(path: path))
                #expect(throws: Never.self, "root \(root)") { try plan.checkDestinationsOnDisk() }
            }
        }
    }

    @Test func aSymlinkOutOfARootNotMadeYetIsStillRefused() throws {
        try withTestDirectorySync { dir in
            let manager = FileManager.default
            try manager.createDirectory(atPath: dir + "/out/mirror", withIntermediateDirectories: true)
            try manager.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
            try manager.createSymbolicLink(atPath: dir + "/out/mirror/isos", withDestinationPath: dir + "/elsewhere")
            let path = dir + "/m.yaml"
            try "version: 1\nroot: out/./mirror\nitems:\n  - {url: 'https://h/a.bin', dest: isos/new/a.bin}\n"
                .write(toFile: path, atomically: true, encoding: .utf8)
            let plan = Plan(manifest: try Manifest.load(path: path))
            #expect(throws: ManifestError.self) { try plan.checkDestinationsOnDisk() }
        }
    }

    @Test func oneReadOfAFolderTellsWhichNamesNeedTheirOwnCheck() throws {
        try withTestDirectorySync { dir in
            let manager = FileManager.default
            try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/file"))
            try manager.createDirectory(atPath: dir + "/folder", withIntermediateDirectories: true)
            try manager.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "/")
            let listing = RootConfinement.Listing(dir)
            #expect(!listing.mayBeOtherThanAFile("file"))
            #expect(!listing.mayBeOtherThanAFile("absent"))
            #expect(listing.mayBeOtherThanAFile("folder"))
            #expect(listing.mayBeOtherThanAFile("link"))
            #expect(!RootConfinement.Listing(dir + "/absent").mayBeOtherThanAFile("file"))
            #expect(!RootConfinement.Listing(dir + "/file").mayBeOtherThanAFile("x"))
        }
    }

    /// The same read says which names a folder surely lacks: the walk decides to
    /// fetch those without a `stat`, and looks at the others as before.
    @Test func oneReadOfAFolderTellsWhichNamesAreSurelyAbsent() throws {
        try withTestDirectorySync { dir in
            try FileManager.default.createDirectory(atPath: dir + "/out/d", withIntermediateDirectories: true)
            try Data("old".utf8).write(to: URL(fileURLWithPath: dir + "/out/d/present"))
            let listing = RootConfinement.Listing(dir + "/out/d")
            #expect(listing.mayHold("present") && !listing.mayHold("absent"))
            #expect(!RootConfinement.Listing(dir + "/out/missing").mayHold("present"))
            // A case-insensitive file system would give "PRESENT" the file "present";
            // a name past ASCII may be folded its own way, so then nothing is ruled out.
            #expect(listing.mayHold("PRESENT") && listing.mayHold("Present"))
            try FileManager.default.createDirectory(atPath: dir + "/out/e", withIntermediateDirectories: true)
            try Data().write(to: URL(fileURLWithPath: dir + "/out/e/Straße"))
            #expect(RootConfinement.Listing(dir + "/out/e").mayHold("strasse"))
            #expect(RootConfinement.Listing(dir + "/out/e").mayHold("absent"))
            #expect(!RootConfinement.Listing(dir + "/out").mayHold("absent"))

            let path = dir + "/m.yaml"
            let sum = String(repeating: "a", count: 64)
            try
                "version: 1\nroot: out\nitems:\n  - {url: 'https://h/p', dest: d/present, sha256: \(sum)}\n  - {url: 'https://h/a', dest: d/absent, sha256: \(sum)}\n  - {url: 'https://h/n', dest: new/x, sha256: \(sum)}\n"
                .write(toFile: path, atomically: true, encoding: .utf8)
            let plan = Plan(manifest: try Manifest.load(path: path))
            let listings = try RootConfinement.check(plan)
            #expect(listings.mayHold(plan.items[0].path))
            #expect(!listings.mayHold(plan.items[1].path) && !listings.mayHold(plan.items[1].statePath))
            #expect(!listings.mayHold(plan.items[2].path), "a folder not made yet holds nothing")
            let root = try RootDirectory(path: dir + "/out")
            // A file made after the read: the listing still says absent, a stat would not.
            try Data("late".utf8).write(to: URL(fileURLWithPath: dir + "/out/d/absent"))
            guard case .decided(let fresh) = plan.items[1].inspect(resume: true, root: root, listings: listings) else {
                Issue.record("an absent item is decided without hashing")
                return
            }
            #expect(fresh.action == .fetch && fresh.noResumeState)
            guard case .needsHashing = plan.items[1].inspect(resume: true, root: root) else {
                Issue.record("without a listing the file made since is looked at")
                return
            }
            guard case .needsHashing = plan.items[0].inspect(resume: true, root: root, listings: listings) else {
                Issue.record("a present file is still looked at")
                return
            }
        }
    }

    @Test func aSymlinkOrFolderAmongManyFilesIsStillFound() throws {
        try withTestDirectorySync { dir in
            let manager = FileManager.default
            try manager.createDirectory(atPath: dir + "/out/d", withIntermediateDirectories: true)
            for name in ["a", "b", "c"] { try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/out/d/\(name)")) }
            try manager.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
            try manager.createSymbolicLink(atPath: dir + "/out/d/link", withDestinationPath: dir + "/elsewhere/x")
            try manager.createDirectory(atPath: dir + "/out/d/sub", withIntermediateDirectories: true)
            for (dest, problem) in [("d/link", "through a symlink"), ("d/sub", "existing folder")] {
                let path = dir + "/m.yaml"
                let items = ["a", "b", "c"].map { "  - {url: 'https://h/\($0)', dest: d/\($0)}\n" }.joined()
                try "version: 1\nroot: out\nitems:\n\(items)  - {url: 'https://h/z', dest: \(dest)}\n"
                    .write(toFile: path, atomically: true, encoding: .utf8)
                let plan = Plan(manifest: try Manifest.load(path: path))
                let error = #expect(throws: ManifestError.self) { try plan.checkDestinationsOnDisk() }
                #expect(error?.message.contains(problem) == true, "\(String(describing: error))")
            }
        }
    }
}

extension RootConfinement.Listing {
    /// Whether the listing may hold `name` (`FolderListings.Names` asks by hash).
    fileprivate func mayHold(_ name: String) -> Bool { mayHold(NameHash(name.utf8)) }
}

extension FolderListings {
    /// False only when `path` was surely missing from its folder.
    fileprivate func mayHold(_ path: String) -> Bool { names(at: path).mayHold() }
}
