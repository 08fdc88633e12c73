import Foundation
import Subprocess

/// Detached OpenPGP signatures checked with `gpgv`, the verifier apt uses: it only
/// verifies, against exactly the keyring it is given, and never touches a user's
/// keys.
enum SignatureCheck {
    /// nil when `gpgv --keyring KEYRING SIGNATURE LIST` accepts the list; otherwise
    /// gpgv's reason (bad signature, unknown key, not a signature) in one line.
    ///
    /// gpgv is started with swift-subprocess, not `Foundation.Process`, whose
    /// `run()` reads past a buffer of its own while it closes the child's descriptors
    /// (a crash in a process with many malloc arenas).
    static func verify(list: String, signature: String, keyring: String) async -> String? {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-gpgv-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let keys: String
        do { keys = try Keyring.usable(keyring, in: home) } catch { return "cannot use keyring \(keyring): \(error.message)" }
        let result: ExecutionResult<Void, DiscardedOutput, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .name("gpgv"), arguments: ["--homedir", home, "--keyring", keys, signature, list], output: .discarded,
                error: .string(limit: 1 << 20))
        } catch {
            return "cannot run gpgv (install Debian's gpgv package): \(error)"
        }
        let status: String
        switch result.terminationStatus {
        case .exited(0): return nil
        case .exited(let code): status = "gpgv exited \(code)"
        case .signaled(let signal): status = "gpgv was killed by signal \(signal)"
        }
        let output = result.standardError
        let lines = output.split(separator: "\n").map {
            $0.hasPrefix("gpgv: ") ? String($0.dropFirst(6)) : String($0)
        }
        // gpgv says what it checked first, then why it refused: keep the reasons.
        let reasons = lines.filter {
            !$0.hasPrefix("Signature made") && !$0.hasPrefix("               using") && !$0.hasPrefix("               issuer")
        }
        return (reasons.isEmpty ? lines : reasons).joined(separator: "; ").ifEmpty(status)
    }
}

extension String {
    fileprivate func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
