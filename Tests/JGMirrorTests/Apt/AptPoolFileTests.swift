import Testing

@testable import JGMirror

/// Packages and Sources stanzas → the pool files a set mirrors.
@Suite struct AptPoolFileTests {
    static let sha = ReleaseFixture.hash(0xab)
    static let sha512 = ReleaseFixture.hash(0xcd, digits: 128)

    /// Two stanzas as Debian's Packages writes them (fields trimmed).
    static let packages = """
        Package: 0ad
        Version: 0.0.26-3
        Installed-Size: 28591
        Maintainer: Debian Games Team <pkg-games-devel@lists.alioth.debian.org>
        Architecture: amd64
        Description: Real-time strategy game of ancient warfare
        Filename: pool/main/0/0ad/0ad_0.0.26-3_amd64.deb
        Size: 7891488
        MD5sum: 4d471183a39a3a11d00cd35bf9f6803d
        SHA256: \(sha)

        Package: hello
        Version: 2.10-3
        Architecture: amd64
        Filename: pool/main/h/hello/hello_2.10-3_amd64.deb
        Size: 52896
        SHA256: \(sha.uppercased())
        SHA512: \(sha512)

        """

    private func packagesError(_ text: String) -> AptError? {
        do {
            _ = try AptPoolFile.packages(Array(text.utf8), file: "P")
            return nil
        } catch { return error }
    }

    @Test func packagesNameTheirDebs() throws {
        let files = try AptPoolFile.packages(Array(Self.packages.utf8), file: "P")
        #expect(
            files == [
                AptPoolFile(path: "pool/main/0/0ad/0ad_0.0.26-3_amd64.deb", size: 7_891_488, sha256: Self.sha, line: 7),
                AptPoolFile(
                    path: "pool/main/h/hello/hello_2.10-3_amd64.deb", size: 52896, sha256: Self.sha, sha512: Self.sha512,
                    line: 15),
            ])
    }

    @Test func anEmptyPackagesIndexNamesNothing() throws {
        #expect(try AptPoolFile.packages([], file: "P").isEmpty)
    }

    @Test(arguments: [
        ("Package: a\nSize: 1\nSHA256: \(sha)\n", 1, "the stanza has no Filename field"),
        ("Package: a\nFilename: pool/a.deb\nSHA256: \(sha)\n", 1, "the stanza has no Size field"),
        (
            "Package: a\nFilename: pool/a.deb\nSize: 1\nMD5sum: 0\n", 1,
            "the stanza has no SHA256 field; apt refuses such a package too"
        ),
        ("Filename: pool/a.deb\nSize: 1\nSHA256: abc\n", 3, "SHA256 is not 64 hex digits"),
        ("Filename: pool/a.deb\nSize: 1x\nSHA256: \(sha)\n", 2, "Size '1x' is not a size in bytes"),
        ("Filename: pool/a.deb\nSize: 1\nSHA256: \(sha)\nSHA512: 12\n", 4, "SHA512 is not 128 hex digits"),
    ])
    func incompleteStanzasAreRefusedWithTheirLine(text: String, line: Int, reason: String) {
        #expect(packagesError(text) == .malformed(file: "P", line: line, reason))
    }

    @Test(arguments: [
        "../../../etc/cron.d/x", "/etc/passwd", "pool/../../x.deb", "pool/./a.deb", "pool//a.deb", ".jgmirror/state",
        "pool/a.deb.jgpart", "dists/stable/InRelease", "pool/a\u{7}.deb",
    ])
    func aFilenameThatLeavesThePoolIsRefused(path: String) {
        let error = packagesError("Package: a\nFilename: \(path)\nSize: 1\nSHA256: \(Self.sha)\n")
        guard case .unsafePath("P", 2, path, _)? = error else {
            Issue.record("\(path) gave \(String(describing: error))")
            return
        }
        #expect(error?.code == .list)
    }

    @Test func sourcesNameTheirDirectorysFiles() throws {
        let text = """
            Package: hello
            Binary: hello
            Version: 2.10-3
            Directory: pool/main/h/hello
            Files:
             6e0e2b5a6bd5bd9fa0ff3e0ac9a1ed08 1183 hello_2.10-3.dsc
            Checksums-Sha256:
             \(Self.sha) 1183 hello_2.10-3.dsc
             \(ReleaseFixture.hash(1)) 725946 hello_2.10.orig.tar.gz

            """
        let files = try AptPoolFile.sources(Array(text.utf8), file: "S")
        #expect(files.map(\.path) == ["pool/main/h/hello/hello_2.10-3.dsc", "pool/main/h/hello/hello_2.10.orig.tar.gz"])
        #expect(files.map(\.size) == [1183, 725_946])
        #expect(files.map(\.line) == [8, 9])
    }

    @Test func sourcesStanzasMustNameSafeFiles() {
        func error(_ text: String) -> AptError? {
            do {
                _ = try AptPoolFile.sources(Array(text.utf8), file: "S")
                return nil
            } catch { return error }
        }
        #expect(
            error("Package: a\nChecksums-Sha256:\n \(Self.sha) 1 a.dsc\n")
                == .malformed(file: "S", line: 1, "the stanza has no Directory field"))
        #expect(
            error("Package: a\nDirectory: pool/a\n") == .malformed(file: "S", line: 1, "the stanza has no Checksums-Sha256 files")
        )
        guard case .unsafePath("S", 3, "../a.dsc", _)? = error("Directory: pool/a\nChecksums-Sha256:\n \(Self.sha) 1 ../a.dsc\n")
        else {
            Issue.record("a file name with '..' was taken")
            return
        }
        guard case .unsafePath("S", 1, "../pool", _)? = error("Directory: ../pool\nChecksums-Sha256:\n \(Self.sha) 1 a.dsc\n")
        else {
            Issue.record("a Directory with '..' was taken")
            return
        }
        #expect(
            error("Directory: pool/a\nChecksums-Sha256:\n \(Self.sha) 1\n")
                == .malformed(file: "S", line: 3, "expected 'HASH SIZE NAME' in Checksums-Sha256"))
    }

    @Test func thePoolMergesTheSameFileAndKeepsConflicts() {
        let deb = AptPoolFile(path: "pool/main/a/a_1_all.deb", size: 10, sha256: Self.sha, line: 3)
        var pool = AptPool()
        pool.add([deb], from: "dists/stable/main/binary-amd64/Packages.xz")
        var same = deb
        (same.line, same.sha512) = (7, Self.sha512)
        pool.add([same], from: "dists/stable/main/binary-all/Packages.xz")
        #expect(pool.files.count == 1)
        #expect(pool.files.first?.sha512 == Self.sha512)
        #expect(pool.conflicts.isEmpty)
        var other = deb
        (other.size, other.line) = (11, 9)
        pool.add([other], from: "dists/testing/main/binary-amd64/Packages.xz")
        #expect(pool.files.count == 1)
        #expect(pool.files.first?.size == 10)
        #expect(
            pool.conflicts.map(\.message) == [
                "pool/main/a/a_1_all.deb: 10 bytes, SHA256 abababababab… by dists/stable/main/binary-amd64/Packages.xz line 3, "
                    + "but 11 bytes, SHA256 abababababab… by dists/testing/main/binary-amd64/Packages.xz line 9"
            ])
    }
}
