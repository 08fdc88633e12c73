import Foundation

/// Reads one suite of an `apt:` set through the run's list fetcher (docs/apt.md): its
/// Release, verified with gpgv against the set's keyring and weighed against the
/// Release the mirror publishes now (the replay rule), then one readable form of each
/// wanted `Packages` (and `Sources`), checked against Release and parsed into the pool
/// files it names. Every file is kept in the tree's list cache: the Release files are
/// fetched conditionally (a suite that did not change costs a `304` each), and an index
/// whose cached copy has the hash Release gives it costs no request at all.
struct AptSuiteReader: Sendable {
    let catalog: AptCatalog
    let set: ManifestSet
    let context: CatalogContext

    /// What one suite gave: the exact bytes of its Release files as verified, the plan
    /// of its indexes, the index forms read (their bytes as fetched), and the pool files
    /// each index names.
    struct Suite {
        var name: String
        /// `BASE/dists/SUITE/`.
        var url: String
        var release: AptRelease
        var plan: AptIndexPlan
        var inRelease: Data?
        var releaseFile: Data?
        var releaseSignature: Data?
        /// The forms read, by path relative to the suite's folder.
        var read: [String: Data] = [:]
        /// The pool files of each index read, with the index's name for errors.
        var named: [(index: String, files: [AptPoolFile])] = []
    }

    /// Why a suite was not read: the suite fails alone (its row, `code`), or the whole
    /// run stops (this machine cannot hold a file).
    enum Failure: Error {
        case suite(ItemError)
        case run(SyncError)

        init(_ error: AptError) { self = .suite(ItemError(code: error.code, message: error.message)) }
    }

    /// The suite's folder URL, `BASE/dists/SUITE/`.
    func folderURL(_ suite: String) -> String {
        SetExpansion.resolve(name: "dists/" + suite + "/", against: catalog.base, isFolder: true)
    }

    /// Reads `suite`.
    func read(_ suite: String) async throws(Failure) -> Suite {
        let url = folderURL(suite)
        var read = try await release(of: suite, at: url)
        let file = shown(url, read.inRelease == nil ? "Release" : "InRelease")
        if let problem = ReleaseFreshness.problem(held: heldRelease(of: suite), new: read.release, now: context.now, file: file) {
            throw Failure(problem)
        }
        let selection = AptSelection(
            components: catalog.components, architectures: catalog.architectures, sources: catalog.sources)
        do { read.plan = try selection.plan(read.release, file: file) } catch { throw Failure(error) }
        // Each index at once: each costs a round trip, none depends on another.
        let wanted = read.plan.packages.map { ($0, false) } + read.plan.sources.map { ($0, true) }
        let indexes = try await concurrentMap(wanted) { [self] (readable, sources) async throws(Failure) in
            try await index(readable, sources: sources, in: url)
        }
        for index in indexes {
            read.read[index.path] = index.data
            read.named.append((index.name, index.files))
        }
        return read
    }

    /// `BASE/dists/SUITE/name`, redacted, as messages name it.
    func shown(_ folder: String, _ name: String) -> String { Redactor.redactURLAndQuery(folder + name) }

    /// The bytes of `name` in the suite's folder at `folder`, conditionally fetched; nil
    /// when the server has no such file (404, 410). `limit`: the most bytes taken.
    func fetch(_ name: String, in folder: String, limit: Int64 = ListFetcher.sizeLimit, fresh: Bool = false)
        async throws(Failure) -> ListFetcher.FetchedFile?
    {
        let url = SetExpansion.resolve(name: name, against: folder, isFolder: true)
        do {
            return try await context.fetcher.file(
                url, headers: context.headers, settings: context.settings(of: set), limit: limit, fresh: fresh)
        } catch {
            guard case .checksums(_, let cause) = error else { throw .run(error) }
            if cause.code == .http(404) || cause.code == .http(410) { return nil }
            if cause.code == .tooLarge {
                throw Failure(.mismatch(file: shown(folder, name), "the server sends more than the \(limit) bytes expected"))
            }
            var failure = error.listError
            failure.message = "cannot fetch \(shown(folder, name)): " + Redactor.redactURLsAndQueries(in: cause.message)
            throw .suite(failure)
        }
    }

    /// The Release the mirror publishes now for `suite` (its InRelease's signed text,
    /// else its Release), read where readers are served; nil when there is none or it
    /// cannot be read. Read from the tree rather than the state database, it holds for
    /// a tree whose database was lost, and for what a reader actually meets.
    func heldRelease(of suite: String) -> AptRelease? {
        guard let served = context.served else { return nil }
        let folder = served + "/" + set.dest + "dists/" + suite + "/"
        if let data = FileManager.default.contents(atPath: folder + "InRelease"),
            let message = try? ClearsignedMessage(parsing: [UInt8](data)),
            let release = try? AptRelease(parsing: message.text, file: "InRelease")
        {
            return release
        }
        guard let data = FileManager.default.contents(atPath: folder + "Release") else { return nil }
        return try? AptRelease(parsing: [UInt8](data), file: "Release")
    }
}
