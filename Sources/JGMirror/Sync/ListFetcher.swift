import Foundation

/// Fetches checksums lists and their signatures whole, through a transfer engine,
/// into a private temporary folder that goes away with the fetcher.
final class ListFetcher: Sendable {
    private let engine: TransferEngine
    private let folder: String
    /// The folder, opened once: lists are written and read through it.
    private let root: RootDirectory
    private let counter = Locked(0)

    init(engine: TransferEngine) throws(SyncError) {
        self.engine = engine
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-lists-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            root = try RootDirectory(path: folder)
        } catch {
            throw .local("cannot create \(folder): \(error.localizedDescription)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// The path of `url`'s body, or why it could not be fetched. Lists are small:
    /// one connection, at most 64 MiB.
    func fetch(_ url: String, headers: [HTTPHeader]) async -> Result<String, TransferError> {
        let path = "\(folder)/list-\(counter.withLock { value -> Int in value += 1; return value })"
        // Lists travel under id -1: the session's events leave them out.
        let request = TransferRequest(
            id: -1, sources: [url], root: root, partPath: path, statePath: path + ".jgd", expectedSize: nil, connections: 1,
            retries: 2, minSegment: 1 << 20, timeout: 30, headers: headers.map { "\($0.name): \($0.value)" },
            insecure: false, resume: false, observer: nil, sizeLimit: 64 << 20)
        let engine = self.engine
        let outcome = await withCheckedContinuation { done in engine.submit(request) { done.resume(returning: $0) } }
        switch outcome.status {
        case .completed: return .success(path)
        case .failed(let error): return .failure(error)
        case .cancelled, .skipped: return .failure(TransferError(code: .interrupted, message: "interrupted"))
        case .notModified:
            // Lists are fetched without conditions, so a 304 answers nothing that was asked.
            return .failure(TransferError(code: .protocolViolation, message: "unexpected 304 Not Modified for \(Redactor.redactURLAndQuery(url))"))
        }
    }

    /// Fetches `url` as text; a failure stops the run (SPEC §9: exit 1, nothing fetched).
    func text(_ url: String, headers: [HTTPHeader]) async throws(SyncError) -> (path: String, text: String) {
        switch await fetch(url, headers: headers) {
        case .failure(let error): throw .checksums(url: url, error: error)
        case .success(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .local("cannot read the fetched list of \(Redactor.redactURLAndQuery(url))")
            }
            return (path, String(decoding: data, as: UTF8.self))
        }
    }

    /// Checks the list at `path` against `signature`: nil when gpgv accepts it, else
    /// the `signature` error every item of the list fails with.
    func check(list path: String, listURL: String, signature: ListSignature, headers: [HTTPHeader]) async -> ItemError? {
        switch await fetch(signature.url, headers: headers) {
        case .failure(let error):
            return ItemError(
                code: .signature,
                message: "cannot fetch the signature \(Redactor.redactURLAndQuery(signature.url)) of \(Redactor.redactURLAndQuery(listURL)): \(error.message)")
        case .success(let signaturePath):
            return SignatureCheck.verify(list: path, signature: signaturePath, keyring: signature.keyring).map {
                ItemError(
                    code: .signature,
                    message: "\(Redactor.redactURLAndQuery(listURL)) is not signed by a key in \(signature.keyring): \($0)")
            }
        }
    }
}
