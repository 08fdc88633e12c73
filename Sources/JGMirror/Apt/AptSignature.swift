import Foundation

/// A suite's Release, verified with gpgv against the set's keyring: from `InRelease`
/// (cleartext-signed) or from `Release` + `Release.gpg` (detached), as apt reads
/// them. What comes back is exactly the text gpgv verified; nothing outside it is
/// ever used.
enum AptSignature {
    /// The signed text of the InRelease file at `path`.
    ///
    /// Two readings must agree: gpgv's own (`--output`, the text it verified) and
    /// `ClearsignedMessage`'s strict one, which refuses any text outside the signed
    /// part and any second message. gpgv alone would verify a file with text before
    /// or after the message and say nothing about it.
    static func verifyInRelease(path: String, keyring: String, file: String) async throws(AptError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .signature(file: file, "cannot read it again to verify it")
        }
        let message: ClearsignedMessage
        do { message = try ClearsignedMessage(parsing: [UInt8](data)) } catch {
            throw .notClearsigned(file: file, line: error.line, error.message)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-inrelease-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw .signature(file: file, "cannot create \(folder.path): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("signed").path
        try await check(["--output", output, path], keyring: keyring, file: file)
        guard let signed = FileManager.default.contents(atPath: output) else {
            throw .signature(file: file, "gpgv accepted it but wrote no signed text")
        }
        guard [UInt8](signed) == message.text else {
            throw .notClearsigned(file: file, line: 1, "its signed text differs from the text gpgv verified")
        }
        return message.text
    }

    /// The bytes of the `Release` file at `path`, checked against the detached
    /// signature at `signature` (Release.gpg). The bytes are read once and the copy
    /// gpgv checks is written from them, so the bytes returned are the bytes verified.
    static func verifyDetached(path: String, signature: String, keyring: String, file: String) async throws(AptError)
        -> [UInt8]
    {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .signature(file: file, "cannot read it again to verify it")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-release-\(UUID().uuidString)")
        let copy = folder.appendingPathComponent("Release").path
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try data.write(to: URL(fileURLWithPath: copy))
        } catch {
            throw .signature(file: file, "cannot write the copy to verify in \(folder.path): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        try await check([signature, copy], keyring: keyring, file: file)
        return [UInt8](data)
    }

    /// Runs gpgv with its status lines and judges them (`GpgvVerdict`).
    private static func check(_ arguments: [String], keyring: String, file: String) async throws(AptError) {
        switch await SignatureCheck.gpgv(arguments, keyring: keyring, statusLines: true) {
        case .failure(let failure): throw .signature(file: file, failure.message)
        case .success(let run):
            if run.signal != nil { throw .signature(file: file, run.reasons) }
            guard let refusal = GpgvVerdict(status: run.status).refusal else { return }
            // Without status lines (a keyring gpgv cannot read), gpgv's own words say more.
            let reason = run.status.contains("[GNUPG:]") ? refusal : run.reasons
            throw .signature(file: file, "\(reason) (keyring \(keyring))")
        }
    }
}
