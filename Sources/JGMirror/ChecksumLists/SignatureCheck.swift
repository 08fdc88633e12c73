import Foundation
import Subprocess

/// OpenPGP signatures checked with `gpgv`, the verifier apt uses: it only verifies,
/// against exactly the keyring it is given, and never touches a user's keys.
enum SignatureCheck {
    /// What one run of gpgv said.
    struct Run: Sendable {
        /// gpgv's exit code; nil when a signal ended it.
        var exitCode: Int32?
        /// The signal that ended gpgv, if one did.
        var signal: Int32?
        /// The `[GNUPG:]` status lines (`--status-fd 1`), when asked for.
        var status: String
        /// gpgv's messages for people.
        var messages: String

        /// A one-line summary of gpgv's messages: the reasons it refused, without the
        /// lines that only say what it checked.
        var reasons: String {
            let lines = messages.split(separator: "\n").map {
                $0.hasPrefix("gpgv: ") ? String($0.dropFirst(6)) : String($0)
            }
            let reasons = lines.filter {
                !$0.hasPrefix("Signature made") && !$0.hasPrefix("               using")
                    && !$0.hasPrefix("               issuer")
            }
            let summary = (reasons.isEmpty ? lines : reasons).joined(separator: "; ")
            guard summary.isEmpty else { return summary }
            return exitCode.map { "gpgv exited \($0)" } ?? "gpgv was killed by signal \(signal ?? 0)"
        }
    }

    /// Runs `gpgv --homedir HOME --keyring KEYS [--status-fd 1] ARGUMENTS` in a
    /// private, empty home folder removed afterwards; KEYS is `keyring`, made binary
    /// when it is armored. A failure is the one line that says why gpgv did not run.
    ///
    /// gpgv is started with swift-subprocess, not `Foundation.Process`, whose
    /// `run()` reads past a buffer of its own while it closes the child's descriptors
    /// (a crash in a process with many malloc arenas).
    static func gpgv(_ arguments: [String], keyring: String, statusLines: Bool = false) async -> Result<Run, Failure> {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-gpgv-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let keys: String
        do { keys = try Keyring.usable(keyring, in: home) } catch {
            return .failure(Failure(message: "cannot use keyring \(keyring): \(error.message)"))
        }
        let options = ["--homedir", home, "--keyring", keys] + (statusLines ? ["--status-fd", "1"] : [])
        let result: ExecutionResult<Void, StringOutput<UTF8>, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .name("gpgv"), arguments: Arguments(options + arguments), output: .string(limit: 1 << 20),
                error: .string(limit: 1 << 20))
        } catch {
            return .failure(Failure(message: "cannot run gpgv (install Debian's gpgv package): \(error)"))
        }
        var run = Run(status: result.standardOutput, messages: result.standardError)
        switch result.terminationStatus {
        case .exited(let code): run.exitCode = code
        case .signaled(let signal): run.signal = signal
        }
        return .success(run)
    }

    /// Why gpgv could not be run at all.
    struct Failure: Error {
        var message: String
    }

    /// nil when `gpgv --keyring KEYRING SIGNATURE LIST` accepts the detached
    /// `signature` of `list`; otherwise gpgv's reason (bad signature, unknown key,
    /// not a signature) in one line.
    static func verify(list: String, signature: String, keyring: String) async -> String? {
        switch await gpgv([signature, list], keyring: keyring) {
        case .failure(let failure): return failure.message
        case .success(let run): return run.exitCode == 0 ? nil : run.reasons
        }
    }
}
