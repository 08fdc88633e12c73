import Foundation
import Testing

/// Two throwaway signing keys in a temporary GnuPG home: `trusted`, exported to
/// `keyring`, and `stranger`, which is not in it.
struct TestKeys {
    let home: String
    let keyring: String
    let trusted = "Trusted Release <trusted@example.invalid>"
    let stranger = "Stranger <stranger@example.invalid>"

    /// A detached binary signature of `text` by `signer`.
    func sign(_ text: String, with signer: String) throws -> [UInt8] {
        let list = home + "/to-sign"
        try Data(text.utf8).write(to: URL(fileURLWithPath: list))
        try gpg(["--yes", "--local-user", signer, "--output", list + ".gpg", "--detach-sign", list])
        return Array(try Data(contentsOf: URL(fileURLWithPath: list + ".gpg")))
    }

    func gpg(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gpg", "--batch", "--quiet", "--homedir", home + "/gnupg"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0, "gpg \(arguments.joined(separator: " ")) failed (is Debian's gnupg installed?)")
    }
}

/// Makes the keys in a temporary folder, runs `body`, then stops GnuPG's agent and
/// removes everything.
func withKeys(_ body: (TestKeys) async throws -> Void) async throws {
    try await withTestDirectory { dir in
        let keys = TestKeys(home: dir, keyring: dir + "/keyring.gpg")
        try FileManager.default.createDirectory(
            atPath: dir + "/gnupg", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer {
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            stop.arguments = ["gpgconf", "--homedir", dir + "/gnupg", "--kill", "all"]
            try? stop.run()
            stop.waitUntilExit()
        }
        for user in [keys.trusted, keys.stranger] {
            try keys.gpg(["--passphrase", "", "--quick-gen-key", user, "ed25519", "sign", "never"])
        }
        try keys.gpg(["--output", keys.keyring, "--export", keys.trusted])
        try await body(keys)
    }
}

/// SHA-512 of `bytes` by coreutils' `sha512sum`, independent of jgmirror's hasher.
func sha512(_ bytes: [UInt8]) async throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-sha512-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return String(try await runProgram("sha512sum", [path]).stdout.prefix(128))
}
