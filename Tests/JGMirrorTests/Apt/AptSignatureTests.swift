import Foundation
import Testing

@testable import JGMirror

extension TestKeys {
    /// `text` cleartext-signed (an InRelease) by each of `signers`, with `options`.
    func clearsign(_ text: String, with signers: [String], options: [String] = []) throws -> [UInt8] {
        let release = home + "/Release"
        try Data(text.utf8).write(to: URL(fileURLWithPath: release))
        try gpg(
            ["--yes"] + signers.flatMap { ["--local-user", $0] } + options + [
                "--output", release + ".asc", "--clearsign", release,
            ])
        return Array(try Data(contentsOf: URL(fileURLWithPath: release + ".asc")))
    }
}

/// Writes `bytes` as `name` in `folder` and returns the path.
private func file(_ bytes: [UInt8], _ name: String, in folder: String) throws -> String {
    let path = folder + "/" + name
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// InRelease and Release + Release.gpg through the real gpgv, as apt judges them.
@Suite struct AptSignatureTests {
    static let release = ReleaseFixture.text(["main/binary-amd64/Packages.xz"]) + " \(ReleaseFixture.hash(3)) 7 main/x\n"
    static let name = "dists/bookworm/InRelease"

    private func refusal(_ bytes: [UInt8], keyring: String, in folder: String) async -> AptError? {
        do {
            let path = try file(bytes, "InRelease", in: folder)
            _ = try await AptSignature.verifyInRelease(path: path, keyring: keyring, file: Self.name)
            return nil
        } catch let error as AptError { return error } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    @Test func theTextGpgvVerifiedIsTheReleaseAndAnArmoredKeyringServesAsWell() async throws {
        try await withKeys { keys in
            let signed = try keys.clearsign(Self.release, with: [keys.trusted])
            let path = try file(signed, "InRelease", in: keys.home)
            let text = try await AptSignature.verifyInRelease(path: path, keyring: keys.keyring, file: Self.name)
            #expect(text == Array(Self.release.utf8))
            let armored = keys.home + "/keyring.asc"
            try keys.gpg(["--armor", "--output", armored, "--export", keys.trusted])
            #expect(try await AptSignature.verifyInRelease(path: path, keyring: armored, file: Self.name) == text)
            #expect(try AptRelease(parsing: text, file: Self.name).codename == "bookworm")
        }
    }

    @Test func aDetachedSignatureVerifiesTheBytesItReturns() async throws {
        try await withKeys { keys in
            let release = try file(Array(Self.release.utf8), "Release", in: keys.home)
            let signature = try file(try keys.sign(Self.release, with: keys.trusted), "Release.gpg", in: keys.home)
            let bytes = try await AptSignature.verifyDetached(
                path: release, signature: signature, keyring: keys.keyring, file: "R")
            #expect(bytes == Array(Self.release.utf8))
            let stranger = try file(try keys.sign(Self.release, with: keys.stranger), "Release.gpg", in: keys.home)
            await #expect(throws: AptError.self) {
                try await AptSignature.verifyDetached(path: release, signature: stranger, keyring: keys.keyring, file: "R")
            }
        }
    }

    @Test func anotherKeyAnAlteredTextAndTextOutsideTheMessageAreRefused() async throws {
        try await withKeys { keys in
            let stranger = await refusal(
                try keys.clearsign(Self.release, with: [keys.stranger]), keyring: keys.keyring, in: keys.home)
            guard case .signature(_, let reason)? = stranger else {
                throw AptTestFailure("another key's InRelease: \(String(describing: stranger))")
            }
            #expect(reason.contains("which is not in the keyring"))
            #expect(stranger?.code == .signature)

            let signed = String(decoding: try keys.clearsign(Self.release, with: [keys.trusted]), as: UTF8.self)
            let altered = signed.replacingOccurrences(of: "Suite: stable", with: "Suite: stab1e")
            guard case .signature(_, let bad)? = await refusal(Array(altered.utf8), keyring: keys.keyring, in: keys.home) else {
                throw AptTestFailure("an altered InRelease was accepted")
            }
            #expect(bad.contains("BAD signature"))

            // gpgv accepts these and verifies only the message; the text around it must never count.
            for outside in ["Suite: evil\n" + signed, signed + "Suite: evil\n", signed + signed] {
                let error = await refusal(Array(outside.utf8), keyring: keys.keyring, in: keys.home)
                guard case .notClearsigned? = error else {
                    throw AptTestFailure("text outside the message: \(String(describing: error))")
                }
            }
        }
    }

    @Test func aGoodSignatureBesideOneByAnUnknownKeyIsEnough() async throws {
        // Debian signs with several keys; gpgv exits 2 when the keyring lacks one of them.
        try await withKeys { keys in
            let signed = try keys.clearsign(Self.release, with: [keys.trusted, keys.stranger])
            #expect(String(decoding: signed, as: UTF8.self).components(separatedBy: "BEGIN PGP SIGNATURE").count == 2)
            #expect(await refusal(signed, keyring: keys.keyring, in: keys.home) == nil)
        }
    }

    @Test func anExpiredKeyAndAWeakDigestAreRefused() async throws {
        try await withKeys { keys in
            let old = "Old Archive <old@example.invalid>"
            try keys.gpg([
                "--passphrase", "", "--faked-system-time", "20200101T000000!", "--quick-gen-key", old, "ed25519", "sign", "1d",
            ])
            let expired = try keys.clearsign(Self.release, with: [old], options: ["--faked-system-time", "20200101T120000!"])
            let oldKeyring = keys.home + "/old.gpg"
            try keys.gpg(["--output", oldKeyring, "--export", old])
            guard case .signature(_, let reason)? = await refusal(expired, keyring: oldKeyring, in: keys.home) else {
                throw AptTestFailure("a signature by an expired key was accepted")
            }
            #expect(reason.contains("has expired"))

            let weak = try keys.clearsign(Self.release, with: [keys.trusted], options: ["--digest-algo", "SHA1"])
            guard case .signature(_, let digest)? = await refusal(weak, keyring: keys.keyring, in: keys.home) else {
                throw AptTestFailure("a SHA-1 signature was accepted")
            }
            #expect(digest.contains("uses SHA-1, a digest apt refuses"))
        }
    }
}

/// A test's own failure with a message.
struct AptTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// gpgv's status lines, as gpgv 2.2 writes them, judged as apt judges them.
@Suite struct GpgvVerdictTests {
    static let good = """
        [GNUPG:] PLAINTEXT 74 0
        [GNUPG:] NEWSIG
        [GNUPG:] KEY_CONSIDERED 595A1A37EBB47E8724435E6250B7B06DD5D36323 0
        [GNUPG:] GOODSIG 50B7B06DD5D36323 jgmirror test archive <archive@example.invalid>
        [GNUPG:] VALIDSIG 595A1A37EBB47E8724435E6250B7B06DD5D36323 2026-11-29 1795919232 0 4 0 22 10 01 595A1A37EBB47E8724435E6250B7B06DD5D36323

        """
    static let unknown = """
        [GNUPG:] NEWSIG s@example.invalid
        [GNUPG:] ERRSIG 04E5813BA7554C26 22 8 01 1795919405 9 3A620966CCD255D03DF5AAB704E5813BA7554C26
        [GNUPG:] NO_PUBKEY 04E5813BA7554C26

        """
    static let expired = """
        [GNUPG:] NEWSIG
        [GNUPG:] KEYEXPIRED 1577923200
        [GNUPG:] EXPKEYSIG E8107196637418B9 Old <old@example.invalid>
        [GNUPG:] VALIDSIG 2E18DC38ECDC433BA4B9B5EEE8107196637418B9 2020-01-01 1577880000 0 4 0 22 8 01 2E18DC38ECDC433BA4B9B5EEE8107196637418B9

        """

    @Test func oneGoodSignatureIsEnoughBesideUnknownAndExpiredKeys() {
        #expect(GpgvVerdict(status: Self.good).refusal == nil)
        #expect(GpgvVerdict(status: Self.good).goodKeys == ["595A1A37EBB47E8724435E6250B7B06DD5D36323"])
        #expect(GpgvVerdict(status: Self.good + Self.unknown + Self.expired).refusal == nil)
    }

    @Test func withoutAGoodSignatureTheReasonsAreGiven() {
        #expect(GpgvVerdict(status: Self.unknown).refusal == "signed by key 04E5813BA7554C26, which is not in the keyring")
        #expect(GpgvVerdict(status: Self.expired).refusal == "key E8107196637418B9 has expired")
        #expect(GpgvVerdict(status: "").refusal == "no valid signature")
        #expect(GpgvVerdict(status: "[GNUPG:] NODATA 1\n").refusal == "no OpenPGP signature in it")
        let weak = Self.good.replacingOccurrences(of: " 22 10 01 ", with: " 22 2 01 ")
        #expect(GpgvVerdict(status: weak).refusal?.contains("uses SHA-1") == true)
        let unsupported = "[GNUPG:] NEWSIG\n[GNUPG:] ERRSIG 04E5813BA7554C26 99 8 01 1795919405 4\n"
        #expect(GpgvVerdict(status: unsupported).refusal == "gpgv cannot check the signature by key 04E5813BA7554C26 (error 4)")
    }

    @Test func aBadSignatureRefusesEvenBesideAGoodOne() {
        let bad = "[GNUPG:] NEWSIG\n[GNUPG:] BADSIG 50B7B06DD5D36323 jgmirror test archive\n"
        #expect(
            GpgvVerdict(status: Self.good + bad).refusal
                == "BAD signature by key 50B7B06DD5D36323: the file was changed after it was signed")
    }
}
