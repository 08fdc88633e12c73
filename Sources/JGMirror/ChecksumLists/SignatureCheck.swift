import Foundation

/// Detached OpenPGP signatures checked with `gpgv`, the verifier apt uses: it only
/// verifies, against exactly the keyring it is given, and never touches a user's
/// keys.
enum SignatureCheck {
    /// nil when `gpgv --keyring KEYRING SIGNATURE LIST` accepts the list; otherwise
    /// gpgv's reason (bad signature, unknown key, not a signature) in one line.
    static func verify(list: String, signature: String, keyring: String) -> String? {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-gpgv-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let keys: String
        do { keys = try Keyring.usable(keyring, in: home) } catch { return "cannot use keyring \(keyring): \(error.message)" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gpgv", "--homedir", home, "--keyring", keys, signature, list]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        do { try process.run() } catch {
            return "cannot run gpgv (install Debian's gpgv package): \(error.localizedDescription)"
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 0 { return nil }
        if process.terminationStatus == 127 { return "gpgv is not installed (Debian's gpgv package)" }
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map {
            $0.hasPrefix("gpgv: ") ? String($0.dropFirst(6)) : String($0)
        }
        // gpgv says what it checked first, then why it refused: keep the reasons.
        let reasons = lines.filter {
            !$0.hasPrefix("Signature made") && !$0.hasPrefix("               using") && !$0.hasPrefix("               issuer")
        }
        return (reasons.isEmpty ? lines : reasons).joined(separator: "; ").ifEmpty("gpgv exited \(process.terminationStatus)")
    }
}

extension String {
    fileprivate func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
