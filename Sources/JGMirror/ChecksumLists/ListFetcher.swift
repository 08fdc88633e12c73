import Foundation

/// Fetches checksums lists and their signatures whole, through a transfer engine,
/// into a private temporary folder that goes away with the fetcher. With a
/// `ListCache`, a list is asked for only if it changed since the cached copy, and a
/// `304` answers with that copy.
final class ListFetcher: Sendable {
    /// Lists are small: at most 64 MiB.
    static let sizeLimit: Int64 = 64 << 20

    private let engine: TransferEngine
    private let cache: ListCache?
    private let folder: String
    /// The folder, opened once: lists are written and read through it.
    private let root: RootDirectory
    private let counter = Locked(0)
    /// Lines about cached copies that could not be written, for the run's report.
    let warnings = Locked<[String]>([])

    init(engine: TransferEngine, cache: ListCache? = nil) throws(SyncError) {
        self.engine = engine
        self.cache = cache
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-lists-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            root = try RootDirectory(path: folder)
        } catch {
            throw .local("cannot create \(folder): \(error.localizedDescription)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// Runs `body` with a fetcher on an engine of its own, shut down after: list work
    /// outside a sync's engine (set expansion, the `checksums:` lists `plan` and
    /// `verify` read). The engine judges hosts by the manifest's host options (`hosts`
    /// in `defaults`, `origins` from `hosts:`). A sync reads its lists on its own
    /// engine instead (`SyncSession.readSets`).
    static func withEngine<Result>(
        configuration: TransferEngine.Configuration, hosts: HostOptions, origins: [String: HostOptions], cache: ListCache?,
        _ body: (ListFetcher) async throws(SyncError) -> Result
    ) async throws(SyncError) -> Result {
        let engine: TransferEngine
        var configuration = configuration
        configuration.apply(hosts, origins: origins)
        do { engine = try TransferEngine(configuration: configuration) { _ in } } catch {
            throw .local(error.message)
        }
        // At the run's deadline the lists not yet in fail with code `deadline`.
        let stopAtDeadline = configuration.runDeadline.map { run in
            run.deadline.schedule(at: run.at) { engine.cancel(clearing: false) }
        }
        defer {
            stopAtDeadline?.cancel()
            engine.shutdown()
        }
        return try await body(try ListFetcher(engine: engine, cache: cache))
    }

    /// How a list's requests go: as its set's items would (the set's options over
    /// `defaults:`), one connection each (docs/manifest.md#sets).
    struct Settings: Sendable, Equatable {
        /// Seconds under `min_rate` after which a request, or a source across its
        /// requests, is too slow (`timeout`).
        var timeout = Rules.timeout.defaultValue
        /// Failures without progress a list's request may have.
        var retries = Rules.defaultRetries(connections: Rules.connections.defaultValue)
        /// TLS peers are not verified (`insecure: true`).
        var insecure = false

        /// `own` (a set's options, or none for a `checksums:` list) over `defaults`, as
        /// an item's resolve (`ItemOptions.resolve`).
        init(_ own: ItemSettings = ItemSettings(), defaults: ItemSettings) {
            let resolved = ItemOptions.resolve(own, defaults: defaults, root: "")
            (timeout, retries, insecure) = (resolved.timeout, resolved.retries, resolved.insecure)
        }

        init() {}
    }

    /// What a fetch brought: the body's path and its validators, or a `304` to `conditions`.
    private enum Answer {
        case body(path: String, validators: Validators)
        case notModified
    }

    /// A new path in the private folder.
    private func nextPath() -> String {
        let number = counter.withLock { value -> Int in
            value += 1
            return value
        }
        return "\(folder)/list-\(number)"
    }

    /// Fetches `url` with one connection (at most `limit` bytes), sending
    /// `conditions` with the first request.
    private func fetch(
        _ url: String, headers: [HTTPHeader], settings: Settings, conditions: [String] = [], limit: Int64 = sizeLimit
    ) async -> Result<Answer, TransferError> {
        let path = nextPath()
        // Lists travel under id -1: the session's events leave them out.
        var own = ItemSettings()
        (own.connections, own.retries, own.timeout, own.insecure) = (1, settings.retries, settings.timeout, settings.insecure)
        own.headers = headers
        own.maxSize = Self.sizeLimit
        var request = TransferRequest(
            id: -1, sources: [url], root: root, partPath: path, statePath: path + ".jgd", expectedSize: nil,
            options: ItemOptions(ItemOptions.resolve(own, defaults: ItemSettings(), root: folder)), resume: false,
            observer: nil)
        request.conditions = conditions
        let engine = self.engine
        let outcome = await withCheckedContinuation { done in engine.submit(request) { done.resume(returning: $0) } }
        switch outcome.status {
        case .completed: return .success(.body(path: path, validators: outcome.validators))
        case .failed(let error): return .failure(error)
        case .cancelled, .skipped:
            guard engine.configuration.runDeadline?.deadline.reached == true else {
                return .failure(TransferError(code: .interrupted, message: "interrupted"))
            }
            return .failure(TransferError(code: .deadline, message: "stopped at the run's deadline (--max-duration)"))
        case .notModified:
            guard !conditions.isEmpty else {
                return .failure(
                    TransferError(
                        code: .protocolViolation, message: "unexpected 304 Not Modified for \(Redactor.redactURLAndQuery(url))"))
            }
            return .success(.notModified)
        }
    }

    /// A list as fetched: `path` holds exactly the bytes of `text`, for `check`.
    struct FetchedList {
        var path: String
        var text: String
        /// The server answered `304` and these are the cached copy's bytes.
        var fromCache: Bool
        /// Why the list's signature fails, when it has one and it does (`signature`).
        var signatureFailure: ItemError?
        /// The signature's bytes as fetched, when the list has one and it verified: what
        /// `publish: true` places beside the list.
        var signature: Data?
    }

    /// Fetches `url` as text, conditionally against the cached copy unless `fresh`.
    /// Throws `.checksums` when it cannot be fetched (the caller fails the list's set),
    /// `.local` when this machine cannot hold it. `path` is the fetched body, or on a
    /// `304` the cached copy, written out afresh.
    func text(_ url: String, headers: [HTTPHeader], settings: Settings, fresh: Bool = false) async throws(SyncError)
        -> FetchedList
    {
        let fetched = try await file(url, headers: headers, settings: settings, fresh: fresh)
        return FetchedList(path: fetched.path, text: String(decoding: fetched.data, as: UTF8.self), fromCache: fetched.fromCache)
    }

    /// A file as fetched: `path` holds exactly `data`.
    struct FetchedFile {
        var path: String
        var data: Data
        /// The server answered `304` and these are the cached copy's bytes.
        var fromCache: Bool
    }

    /// The copy of `url` an earlier run kept (at most `limit` bytes, as `file` takes),
    /// without asking the server; nil when there is none. For a caller that can prove
    /// the copy right on its own: an apt index against the hash its verified Release
    /// gives it (docs/apt.md#what-a-run-asks).
    func keptCopy(of url: String, limit: Int64 = sizeLimit) -> Data? {
        cache?.load(url, limit: max(limit, Self.sizeLimit))?.body
    }

    /// Fetches `url` whole, at most `limit` bytes, conditionally against the cached copy
    /// unless `fresh`, and keeps it in the cache (an apt index, a list). Throws as `text`.
    func file(_ url: String, headers: [HTTPHeader], settings: Settings, limit: Int64 = sizeLimit, fresh: Bool = false)
        async throws(SyncError) -> FetchedFile
    {
        let cached = fresh ? nil : cache?.load(url, limit: max(limit, Self.sizeLimit))
        let conditions = cached?.conditions ?? []
        switch await fetch(url, headers: headers, settings: settings, conditions: conditions, limit: limit) {
        case .failure(let error): throw .checksums(url: url, error: error)
        case .success(.notModified):
            guard let cached else { throw .local("unexpected 304 Not Modified for \(Redactor.redactURLAndQuery(url))") }
            let path = nextPath()
            guard FileManager.default.createFile(atPath: path, contents: cached.body) else {
                throw .local("cannot write the cached list of \(Redactor.redactURLAndQuery(url)) to \(path)")
            }
            return FetchedFile(path: path, data: cached.body, fromCache: true)
        case .success(.body(let path, let validators)):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .local("cannot read the fetched list of \(Redactor.redactURLAndQuery(url))")
            }
            // A copy whose validators prove nothing is kept without them: the next run
            // fetches the list unconditionally (docs/state.md#racy-validators).
            if let cache, let warning = cache.store(CachedList(url: url, validators: validators.lasting, body: data)) {
                warnings.withLock { $0.append(warning) }
            }
            return FetchedFile(path: path, data: data, fromCache: false)
        }
    }

    /// `text`, then the signature when the list has one. A cached copy that fails it is
    /// fetched once more, unconditionally (docs/state.md#lists-and-their-cache): a list
    /// rewritten upstream under its old ETag, or a damaged cache, must not fail every run
    /// until someone clears the cache by hand.
    func verifiedText(_ url: String, headers: [HTTPHeader], settings: Settings, signature: ListSignature?)
        async throws(SyncError) -> FetchedList
    {
        var list = try await text(url, headers: headers, settings: settings)
        guard let signature else { return list }
        (list.signatureFailure, list.signature) = await checked(
            list: list.path, listURL: url, signature: signature, headers: headers, settings: settings)
        if list.signatureFailure != nil, list.fromCache {
            list = try await text(url, headers: headers, settings: settings, fresh: true)
            (list.signatureFailure, list.signature) = await checked(
                list: list.path, listURL: url, signature: signature, headers: headers, settings: settings)
        }
        return list
    }

    /// Checks the list at `path` against `signature`: nil when gpgv accepts it, else
    /// the `signature` error every item of the list fails with. `headers` (the
    /// list's) go with the signature's request only to the list's origin.
    func check(list path: String, listURL: String, signature: ListSignature, headers: [HTTPHeader], settings: Settings)
        async -> ItemError?
    {
        await checked(list: path, listURL: listURL, signature: signature, headers: headers, settings: settings).failure
    }

    /// `check`, and the signature's bytes when gpgv accepted them.
    private func checked(
        list path: String, listURL: String, signature: ListSignature, headers: [HTTPHeader], settings: Settings
    ) async -> (failure: ItemError?, signature: Data?) {
        let sent = Redirect.sendsHeaders(to: signature.url, sources: [listURL], forward: false) ? headers : []
        switch await fetch(signature.url, headers: sent, settings: settings) {
        case .failure(let error):
            let failure = ItemError(
                code: .signature,
                message:
                    "cannot fetch the signature \(Redactor.redactURLAndQuery(signature.url)) of \(Redactor.redactURLAndQuery(listURL)): "
                    + Redactor.redactURLsAndQueries(in: error.message))
            return (failure, nil)
        case .success(.notModified):
            // Signatures are fetched without conditions: `fetch` has already refused a 304.
            let shown = Redactor.redactURLAndQuery(signature.url)
            let failure = ItemError(code: .signature, message: "unexpected 304 Not Modified for \(shown)")
            return (failure, nil)
        case .success(.body(let signaturePath, _)):
            let list = Redactor.redactURLAndQuery(listURL)
            let failure = await SignatureCheck.verify(list: path, signature: signaturePath, keyring: signature.keyring).map {
                reason in
                // gpgv's "BAD signature" means a key of the keyring made the signature
                // over other bytes: the list or the signature was changed since.
                let message =
                    reason.contains("BAD signature")
                    ? "\(list) or its signature was altered after signing (gpgv: \(reason))"
                    : "\(list) is not signed by a key in \(signature.keyring): \(reason)"
                return ItemError(code: .signature, message: message)
            }
            guard failure == nil else { return (failure, nil) }
            // The bytes gpgv just accepted; unreadable now, they fail the check as well.
            guard let bytes = FileManager.default.contents(atPath: signaturePath) else {
                return (ItemError(code: .signature, message: "cannot read the fetched signature of \(list)"), nil)
            }
            return (nil, bytes)
        }
    }
}
