import Foundation

/// The files of a suite a reader fetches itself: `InRelease`, `Release`, `Release.gpg`
/// and the index forms it reads. A copy from the cache that fails its check is
/// fetched once more, unconditionally (docs/state.md#lists-and-their-cache): a file
/// rewritten upstream under its old validators must not fail every run.
extension AptSuiteReader {
    /// The suite's Release: from `InRelease` when the server has it (with `Release` and
    /// `Release.gpg` beside it when they say the same), else from `Release` +
    /// `Release.gpg`. Only the text gpgv verified is read.
    func release(of suite: String, at folder: String) async throws(Failure) -> Suite {
        let keyring = catalog.keyring ?? ""
        guard let inRelease = try await fetch("InRelease", in: folder) else {
            let (release, signature, text) = try await detached(in: folder, keyring: keyring)
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
        (read.releaseFile, read.releaseSignature) = try await besideInRelease(model, in: folder, keyring: keyring)
        return read
    }

    /// `Release` and `Release.gpg` beside an InRelease that says `model`: `Release` when
    /// it says the same (InRelease vouches for it), `Release.gpg` when gpgv accepts it
    /// for that `Release`; nil for each the server lacks.
    private func besideInRelease(_ model: AptRelease, in folder: String, keyring: String) async throws(Failure)
        -> (Data?, Data?)
    {
        for fresh in [false, true] {
            guard let release = try await fetch("Release", in: folder, fresh: fresh) else { return (nil, nil) }
            let signature = try await fetch("Release.gpg", in: folder, fresh: fresh)
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
    private func detached(in folder: String, keyring: String) async throws(Failure) -> (Data, Data, [UInt8]) {
        var release = try await fetch("Release", in: folder)
        var signature = try await fetch("Release.gpg", in: folder)
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

    /// Reads the first form of `readable` the server has, checked against Release, and
    /// adds the pool files it names to `suite`.
    func index(_ readable: AptIndexPlan.Readable, sources: Bool, into suite: inout Suite) async throws(Failure) {
        for form in readable.forms {
            let limit = max(form.file.size, 1)
            let pin = ListFetcher.Pin(size: form.file.size, sha256: form.file.sha256)
            guard var fetched = try await fetch(form.file.path, in: suite.url, limit: limit, pin: pin) else { continue }
            let name = shown(suite.url, form.file.path)
            var text = readable.checked(fetched.data, format: form.format, name: name)
            if case .failure = text, fetched.fromCache,
                let fresh = try await fetch(form.file.path, in: suite.url, limit: limit, fresh: true)
            {
                fetched = fresh
                text = readable.checked(fetched.data, format: form.format, name: name)
            }
            let files: [AptPoolFile]
            do {
                let plain = try text.get()
                files = sources ? try AptPoolFile.sources(plain, file: name) : try AptPoolFile.packages(plain, file: name)
            } catch { throw Failure(error) }
            suite.read[form.file.path] = fetched.data
            suite.named.append((name, files))
            return
        }
        let forms = readable.forms.map { Paths.lastComponent(of: $0.file.path) }.joined(separator: ", ")
        throw .suite(
            ItemError(
                code: .list,
                message: "\(shown(suite.url, readable.base)): the server has none of the forms Release lists (\(forms))"))
    }
}

extension AptIndexPlan.Readable {
    /// `read`, as a result.
    func checked(_ data: Data, format: CompressionFormat, name: String) -> Result<[UInt8], AptError> {
        do { return .success(try read([UInt8](data), format: format, name: name)) } catch { return .failure(error) }
    }
}
