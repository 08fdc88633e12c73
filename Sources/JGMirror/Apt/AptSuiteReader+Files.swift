import Foundation

/// The files of a suite a reader fetches itself: `InRelease`, `Release`, `Release.gpg`
/// and the index forms it reads. A copy from the cache that fails its check is
/// fetched once more, unconditionally (docs/state.md#lists-and-their-cache): a file
/// rewritten upstream under its old validators must not fail every run.
extension AptSuiteReader {
    /// `Release` and `Release.gpg` as fetched; nil for each the server lacks.
    typealias DetachedPair = (release: ListFetcher.FetchedFile?, signature: ListFetcher.FetchedFile?)

    /// The suite's Release: from `InRelease` when the server has it (with `Release` and
    /// `Release.gpg` beside it when they say the same), else from `Release` +
    /// `Release.gpg`. Only the text gpgv verified is read.
    func release(of suite: String, at folder: String) async throws(Failure) -> Suite {
        let keyring = catalog.keyring ?? ""
        // All three at once, each a round trip: a suite with InRelease mirrors the
        // other two beside it, and one without it reads them.
        let files = try await concurrentMap(["InRelease", "Release", "Release.gpg"]) { [self] name async throws(Failure) in
            try await fetch(name, in: folder)
        }
        let beside = (release: files[1], signature: files[2])
        guard let inRelease = files[0] else {
            let (release, signature, text) = try await detached(in: folder, keyring: keyring, first: beside)
            let model = try parsed(text, of: suite, file: shown(folder, "Release"))
            return Suite(
                name: suite, url: folder, release: model, plan: AptIndexPlan(), releaseFile: release, releaseSignature: signature)
        }
        let file = shown(folder, "InRelease")
        var fetched = inRelease
        var text = await Self.verified { () async throws(AptError) in
            try await AptSignature.verifyInRelease(path: fetched.path, keyring: keyring, file: file)
        }
        if case .failure = text, fetched.fromCache, let fresh = try await fetch("InRelease", in: folder, fresh: true) {
            fetched = fresh
            text = await Self.verified { () async throws(AptError) in
                try await AptSignature.verifyInRelease(path: fetched.path, keyring: keyring, file: file)
            }
        }
        let model: AptRelease
        switch text {
        case .failure(let error): throw Failure(error)
        case .success(let text): model = try parsed(text, of: suite, file: file)
        }
        var read = Suite(name: suite, url: folder, release: model, plan: AptIndexPlan(), inRelease: fetched.data)
        (read.releaseFile, read.releaseSignature) = try await besideInRelease(
            model, in: folder, keyring: keyring, first: beside)
        return read
    }

    /// `Release` and `Release.gpg` beside an InRelease that says `model`: `Release` when
    /// it says the same (InRelease vouches for it), `Release.gpg` when gpgv accepts it
    /// for that `Release`; nil for each the server lacks. `first`: the two as fetched
    /// beside InRelease, fetched once more, unconditionally, when a cached copy fails.
    private func besideInRelease(_ model: AptRelease, in folder: String, keyring: String, first: DetachedPair)
        async throws(Failure) -> (Data?, Data?)
    {
        for fresh in [false, true] {
            let release = fresh ? try await fetch("Release", in: folder, fresh: true) : first.release
            guard let release else { return (nil, nil) }
            let signature = fresh ? try await fetch("Release.gpg", in: folder, fresh: true) : first.signature
            let cached = release.fromCache || signature?.fromCache == true
            let file = shown(folder, "Release")
            guard (try? AptRelease(parsing: [UInt8](release.data), file: file)) == model else {
                if cached { continue }
                throw .suite(
                    ItemError(
                        code: .list,
                        message:
                            "\(file) says other than the Release InRelease signs: the archive is changing; a later run takes it"))
            }
            guard let signature else { return (release.data, nil) }
            let (releasePath, signaturePath, signatureFile) = (release.path, signature.path, shown(folder, "Release.gpg"))
            let verified = await Self.verified { () async throws(AptError) in
                try await AptSignature.verifyDetached(
                    path: releasePath, signature: signaturePath, keyring: keyring, file: signatureFile)
            }
            switch verified {
            case .success: return (release.data, signature.data)
            case .failure where cached && !fresh: continue
            case .failure(let error): throw Failure(error)
            }
        }
        return (nil, nil)
    }

    /// `Release` and `Release.gpg` of a suite without InRelease, verified: their bytes,
    /// and the text gpgv verified.
    private func detached(in folder: String, keyring: String, first: DetachedPair) async throws(Failure)
        -> (Data, Data, [UInt8])
    {
        var (release, signature) = first
        for fresh in [false, true] {
            if fresh {
                guard release?.fromCache == true || signature?.fromCache == true else { break }
                release = try await fetch("Release", in: folder, fresh: true)
                signature = try await fetch("Release.gpg", in: folder, fresh: true)
            }
            guard let release, let signature else {
                throw .suite(
                    ItemError(
                        code: .list, message: "\(shown(folder, "")) has neither InRelease nor Release with Release.gpg"))
            }
            let (releasePath, signaturePath, file) = (release.path, signature.path, shown(folder, "Release"))
            let verified = await Self.verified { () async throws(AptError) in
                try await AptSignature.verifyDetached(path: releasePath, signature: signaturePath, keyring: keyring, file: file)
            }
            switch verified {
            case .success(let text): return (release.data, signature.data, text)
            case .failure(let error) where fresh || !(release.fromCache || signature.fromCache): throw Failure(error)
            case .failure: continue
            }
        }
        throw .suite(ItemError(code: .signature, message: "\(shown(folder, "Release")) could not be verified"))
    }

    /// What a check of gpgv's gave, as a result.
    private static func verified(_ check: () async throws(AptError) -> [UInt8]) async -> Result<[UInt8], AptError> {
        do { return .success(try await check()) } catch { return .failure(error) }
    }

    /// The Release in `text`, which must be `suite`'s.
    private func parsed(_ text: [UInt8], of suite: String, file: String) throws(Failure) -> AptRelease {
        let release: AptRelease
        do { release = try AptRelease(parsing: text, file: file) } catch { throw Failure(error) }
        guard release.names(suite: suite) else {
            throw Failure(.otherSuite(file: file, expected: suite, found: release.suite ?? release.codename ?? "?"))
        }
        return release
    }

    /// One index form read: its path in the suite's folder, its bytes as fetched, its
    /// name for errors, and the pool files it names.
    struct IndexRead: Sendable {
        var path: String
        var data: Data
        var name: String
        var files: [AptPoolFile]
    }

    /// Reads the first form of `readable` the server has in the suite's folder at
    /// `folder`, checked against Release.
    func index(_ readable: AptIndexPlan.Readable, sources: Bool, in folder: String) async throws(Failure) -> IndexRead {
        for form in readable.forms {
            let name = shown(folder, form.file.path)
            // The copy an earlier run kept serves when it has the bytes the verified
            // Release gives this form: the signature vouches for them, so the server is
            // not asked (docs/apt.md#what-a-run-asks). Any other copy proves nothing,
            // and the form is fetched whole, without a condition a server could answer
            // with `304`.
            let url = SetExpansion.resolve(name: form.file.path, against: folder, isFolder: true)
            let limit = max(form.file.size, 1)
            let kept = context.fetcher.keptCopy(of: url, limit: limit).map { data in
                (data: data, text: readable.checked(data, format: form.format, name: name))
            }
            let read: (data: Data, text: Result<[UInt8], AptError>)
            if let kept, case .success = kept.text {
                read = kept
            } else {
                guard let fetched = try await fetch(form.file.path, in: folder, limit: limit, fresh: true) else { continue }
                read = (fetched.data, readable.checked(fetched.data, format: form.format, name: name))
            }
            do {
                let plain = try read.text.get()
                let files = sources ? try AptPoolFile.sources(plain, file: name) : try AptPoolFile.packages(plain, file: name)
                return IndexRead(path: form.file.path, data: read.data, name: name, files: files)
            } catch { throw Failure(error) }
        }
        let forms = readable.forms.map { Paths.lastComponent(of: $0.file.path) }.joined(separator: ", ")
        throw .suite(
            ItemError(
                code: .list,
                message: "\(shown(folder, readable.base)): the server has none of the forms Release lists (\(forms))"))
    }
}

extension AptIndexPlan.Readable {
    /// `read`, as a result.
    func checked(_ data: Data, format: CompressionFormat, name: String) -> Result<[UInt8], AptError> {
        do { return .success(try read([UInt8](data), format: format, name: name)) } catch { return .failure(error) }
    }
}
