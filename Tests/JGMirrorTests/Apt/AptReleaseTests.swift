import Foundation
import Testing

@testable import JGMirror

@Suite struct AptReleaseTests {
    private func release(_ text: String) throws(AptError) -> AptRelease {
        try AptRelease(parsing: Array(text.utf8), file: "dists/bookworm/Release")
    }

    private func error(_ text: String) -> AptError? {
        do {
            _ = try release(text)
            return nil
        } catch { return error }
    }

    @Test func debiansFieldsAndFilesAreRead() throws {
        let paths = ["main/binary-amd64/Packages", "main/binary-amd64/Packages.xz", "main/i18n/Translation-en.bz2"]
        let read = try release(ReleaseFixture.text(paths))
        #expect(read.suite == "stable" && read.codename == "bookworm")
        #expect(read.date == 1_707_558_601)
        #expect(read.validUntil == nil)
        #expect(read.acquireByHash)
        #expect(read.components == ["main", "contrib", "non-free-firmware"])
        #expect(read.architectures == ["all", "amd64", "arm64"])
        #expect(read.files.map(\.path) == paths)
        #expect(read.files.map(\.size) == [100, 101, 102])
        #expect(read.file("main/binary-amd64/Packages.xz")?.sha256 == ReleaseFixture.hash(1))
        #expect(read.files.allSatisfy { $0.sha512 == nil })
        #expect(
            read.file("main/binary-amd64/Packages.xz")?.byHashPath == "main/binary-amd64/by-hash/SHA256/" + ReleaseFixture.hash(1)
        )
    }

    @Test func sha512IsAttachedAndThenNamesTheByHashCopy() throws {
        let read = try release(ReleaseFixture.text(["main/binary-amd64/Packages.gz", "Contents-amd64.gz"], sha512: true))
        let packages = try #require(read.file("main/binary-amd64/Packages.gz"))
        #expect(packages.sha512 == ReleaseFixture.hash(0, digits: 128))
        #expect(packages.byHashPath == "main/binary-amd64/by-hash/SHA512/" + ReleaseFixture.hash(0, digits: 128))
        #expect(read.file("Contents-amd64.gz")?.byHashPath == "by-hash/SHA512/" + ReleaseFixture.hash(1, digits: 128))
    }

    @Test func validUntilAndOtherDateFormsAreRead() throws {
        let text = ReleaseFixture.text(["main/binary-amd64/Packages"], extra: "Valid-Until: Sat, 17 Feb 2024 09:50:01 +0100\n")
        #expect(try release(text).validUntil == 1_708_163_401 - 3600)
    }

    @Test func theSuiteAskedForMustBeTheSuiteOrTheCodename() throws {
        let read = try release(ReleaseFixture.text(["main/binary-amd64/Packages"]))
        #expect(read.names(suite: "bookworm") && read.names(suite: "stable") && read.names(suite: "bookworm/updates"))
        #expect(!read.names(suite: "bullseye"))
        #expect(try release("SHA256:\n \(ReleaseFixture.hash(1)) 1 main/binary-amd64/Packages\n").names(suite: "anything"))
    }

    @Test(arguments: [
        ("Suite: x\n", 1, "no SHA256 section; apt, too, refuses a Release without a strong hash"),
        ("SHA256: abc\n", 1, "SHA256: expects its entries on the lines below it"),
        ("SHA256:\n abc 1 main/x\n", 2, "SHA256 hash is not 64 hex digits"),
        ("SHA256:\n \(ReleaseFixture.hash(1)) 1\n", 2, "expected 'HASH SIZE PATH' in SHA256"),
        ("SHA256:\n \(ReleaseFixture.hash(1)) -1 main/x\n", 2, "'-1' is not a size in bytes"),
        ("SHA256:\n \(ReleaseFixture.hash(1)) 99999999999999999999 main/x\n", 2, "'99999999999999999999' is not a size in bytes"),
        (
            "SHA256:\n \(ReleaseFixture.hash(1)) 1 main/x\n \(ReleaseFixture.hash(2)) 2 main/x\n", 3,
            "'main/x' is listed twice in SHA256"
        ),
        (
            "Date: yesterday\nSHA256:\n \(ReleaseFixture.hash(1)) 1 main/x\n", 1,
            "Date 'yesterday' is not a date such as 'Sat, 10 Jun 2023 08:57:04 UTC'"
        ),
        ("Suite: a\n\nSuite: b\n", 3, "a second paragraph; a Release has one"),
        ("", 1, "no fields"),
    ])
    func malformedReleasesAreRefusedWithTheirLine(text: String, line: Int, reason: String) {
        #expect(error(text) == .malformed(file: "dists/bookworm/Release", line: line, reason))
    }

    @Test func sizesMustAgreeBetweenSections() {
        let text = "SHA256:\n \(ReleaseFixture.hash(1)) 1 main/x\nSHA512:\n \(ReleaseFixture.hash(1, digits: 128)) 2 main/x\n"
        #expect(
            error(text) == .malformed(file: "dists/bookworm/Release", line: 4, "'main/x' has size 1 in SHA256 and 2 in SHA512"))
    }

    @Test(arguments: [
        "../../etc/passwd", "/etc/passwd", "main/../../x", "main//x", "main/./x", "main/x/", ".jgmirror/state.sqlite",
        "main/.jgmirror/x", "main/x.jgpart", "main\\x",
    ])
    func aPathThatWouldLeaveTheSuiteIsRefused(path: String) {
        guard case .unsafePath(_, 2, path, _)? = error("SHA256:\n \(ReleaseFixture.hash(1)) 1 \(path)\n") else {
            Issue.record("\(path) was not refused as unsafe")
            return
        }
    }
}

/// The dates Debian writes, and what else RFC 2822 allows.
@Suite struct DebianDateTests {
    @Test(arguments: [
        ("Sat, 10 Jun 2023 08:57:04 UTC", 1_686_387_424),
        ("Sat, 10 Jun 2023 08:57:04 GMT", 1_686_387_424),
        ("10 Jun 2023 08:57:04 Z", 1_686_387_424),
        ("sat, 10 JUN 2023 08:57:04 +0000", 1_686_387_424),
        ("Sat, 10 Jun 2023 10:57:04 +0200", 1_686_387_424),
        ("Sat, 10 Jun 2023 03:57:04 -0500", 1_686_387_424),
        ("Sat, 10 Jun 2023 08:57 UTC", 1_686_387_420),
        ("Thu,  1 Jan 1970 00:00:00 UTC", 0),
    ])
    func datesAreRead(text: String, seconds: Int64) {
        #expect(DebianDate.parse(text) == seconds)
    }

    @Test(arguments: [
        "", "yesterday", "Sat, 10 Jun 2023", "Sat, 10 Jun 2023 08:57:04", "Sat, 10 Jun 2023 08:57:04 CEST",
        "Sat, 31 Feb 2023 08:57:04 UTC", "Sat, 10 Jun 23 08:57:04 UTC", "Sat, +1 Jun 2023 08:57:04 UTC",
        "Sat, 10 Jun 2023 24:00:00 UTC", "Sat, 10 Jun 2023 08:60:00 UTC", "Sat, 10 Jun 2023 8:57:04 UTC",
        "Sat, 10 Jun 2023 08:57:04 +2400", "Someday, 10 Jun 2023 08:57:04 UTC", "Sat, 10 Jun 1969 08:57:04 UTC",
    ])
    func otherTextIsNoDate(text: String) {
        #expect(DebianDate.parse(text) == nil)
    }
}

/// The replay rule, in virtual time.
@Suite struct ReleaseFreshnessTests {
    private func release(date: Int64?, validUntil: Int64? = nil) throws -> AptRelease {
        var release = try AptRelease(parsing: Array("SHA256:\n".utf8), file: "R")
        release.date = date
        release.validUntil = validUntil
        return release
    }

    @Test func aFirstReleaseIsTakenUnlessItHasExpired() throws {
        #expect(ReleaseFreshness.problem(held: nil, new: try release(date: 100), now: 1000, file: "R") == nil)
        #expect(ReleaseFreshness.problem(held: nil, new: try release(date: nil), now: 1000, file: "R") == nil)
        #expect(
            ReleaseFreshness.problem(held: nil, new: try release(date: 100, validUntil: 999), now: 1000, file: "R")
                == .expired(file: "R", validUntil: 999, now: 1000))
        #expect(ReleaseFreshness.problem(held: nil, new: try release(date: 100, validUntil: 1000), now: 1000, file: "R") == nil)
    }

    @Test func anOlderReleaseIsAReplayAndTheSameDateIsTheSameRelease() throws {
        let held = try release(date: 500)
        #expect(ReleaseFreshness.problem(held: held, new: try release(date: 501), now: 1000, file: "R") == nil)
        #expect(ReleaseFreshness.problem(held: held, new: try release(date: 500), now: 1000, file: "R") == nil)
        #expect(
            ReleaseFreshness.problem(held: held, new: try release(date: 499), now: 1000, file: "R")
                == .replayed(file: "R", date: 499, held: 500))
        #expect(ReleaseFreshness.problem(held: held, new: try release(date: nil), now: 1000, file: "R") == .undated(file: "R"))
        #expect(ReleaseFreshness.problem(held: try release(date: nil), new: try release(date: 1), now: 1000, file: "R") == nil)
    }

    @Test func expiryIsCheckedBeforeTheDate() throws {
        let problem = ReleaseFreshness.problem(
            held: try release(date: 500), new: try release(date: 400, validUntil: 600), now: 1000, file: "R")
        #expect(problem == .expired(file: "R", validUntil: 600, now: 1000))
        // Signed, but not to be published: its own code, still an integrity failure.
        #expect(problem?.code == .staleRelease && problem?.code.exitCode == .integrity)
    }
}
