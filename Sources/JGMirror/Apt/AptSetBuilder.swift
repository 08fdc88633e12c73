import Foundation

/// Turns the suites an `apt:` set read into the run's items and publish groups
/// (docs/apt.md, docs/publishing.md#ordered): each pool file once, however many
/// suites and indexes name it; each suite a group of four phases — its pool files,
/// its indexes and their `by-hash` copies, `Release` and `Release.gpg`, `InRelease` —
/// so that an apt client never meets an index before the files it names, nor a
/// Release before its indexes. The index forms the expansion read are placed from the
/// bytes it verified, never fetched again; the other indexes are items checked against
/// Release.
struct AptSetBuilder {
    let catalog: AptCatalog
    let set: ManifestSet
    private(set) var expansion = CatalogExpansion()
    /// The pool files of the suites so far, each path once.
    private var pool = AptPool()
    /// Pool paths that are items already.
    private var pooled = Set<String>()
    private var texts = TextArena.Builder()

    init(catalog: AptCatalog, set: ManifestSet) {
        self.catalog = catalog
        self.set = set
    }

    /// Adds `suite`: its new pool files and its indexes as items, its group; or, when
    /// one of its destinations is taken, a failed row for the suite alone.
    mutating func add(_ suite: AptSuiteReader.Suite, claims: inout SetExpansion) {
        var own = AptPool()
        for (index, files) in suite.named { own.add(files, from: index) }
        var trial = claims
        let folder = "dists/" + suite.name + "/"
        var wanted = zip(own.files, own.origins).filter { !pooled.contains($0.0.path) }.map {
            (set.dest + $0.0.path, SetExpansion.Owner.listed(source: $0.1.index, line: $0.1.line))
        }
        let release = SetExpansion.Owner.published(source: Redactor.redactURLAndQuery(suite.url + "InRelease"))
        wanted += Self.indexDests(of: suite, folder: set.dest + folder).map { ($0, release) }
        for (dest, owner) in wanted {
            guard let failure = claim(dest, by: owner, in: &trial) else { continue }
            expansion.failures.append(ListFailure(folder: set.dest + folder, url: suite.url, error: failure))
            expansion.distrusted = true
            return
        }
        claims = trial
        let conflicts = pool.conflicts.count
        for (index, files) in suite.named { pool.add(files, from: index) }
        for conflict in pool.conflicts.dropFirst(conflicts) {
            expansion.failedItems[set.dest + conflict.first.path] = ItemError(code: .list, message: conflict.message)
        }
        for file in own.files where pooled.insert(file.path).inserted {
            let known = pool.file(at: file.path) ?? file
            expansion.items.append(
                item(
                    url: SetExpansion.resolve(name: file.path, against: catalog.base, isFolder: true),
                    dest: set.dest + file.path, sha256: known.sha256, sha512: known.sha512, size: known.size))
        }
        expansion.groups.append(group(suite, folder: set.dest + folder, pool: own.files.map { set.dest + $0.path }))
    }

    /// Takes `dest` for `owner`; nil when taken, else the suite's failure.
    private func claim(_ dest: String, by owner: SetExpansion.Owner, in claims: inout SetExpansion) -> ItemError? {
        let source = Redactor.redactURLAndQuery(catalog.base)
        let file = claims.file
        let warning = { (message: String) in
            ManifestError(file: file, location: set.location, message: "\(source): \(message)")
        }
        guard let refusal = claims.claim(dest, in: set.dest, by: owner, warning: warning) else { return nil }
        return ItemError(code: .list, message: "\(owner.text): \(refusal)")
    }

    /// Every destination of `suite`'s folder (`folder`, in the tree) the set places:
    /// its indexes, their by-hash copies, and its Release files.
    private static func indexDests(of suite: AptSuiteReader.Suite, folder: String) -> [String] {
        var dests = suite.plan.files.flatMap { [$0.file.path] + ($0.byHash.map { [$0] } ?? []) }.map { folder + $0 }
        if suite.releaseFile != nil { dests.append(folder + "Release") }
        if suite.releaseSignature != nil { dests.append(folder + "Release.gpg") }
        if suite.inRelease != nil { dests.append(folder + "InRelease") }
        return dests
    }

    /// An item of the set: `url` to `dest`, checked by `sha256` (and `sha512`) and `size`.
    private mutating func item(url: String, dest: String, sha256: String, sha512: String?, size: Int64) -> ManifestItem {
        var item = ManifestItem(texts: texts.texts(url: url, dest: dest), hasDest: true, location: set.location)
        item.urlLocation = catalog.baseLocation
        item.destLocation = catalog.baseLocation
        item.extras = ItemExtras(sha512: sha512, tag: set.tag, size: size)
        item.sha256 = sha256
        item.settings = set.settings
        return item
    }
}

extension AptSetBuilder {
    /// `suite`'s group: its pool files (`pool`, their destinations), its indexes and
    /// by-hash copies, `Release` and `Release.gpg`, `InRelease`. Each index form read is
    /// placed from its verified bytes; the others are items of the plan, optional where
    /// Release lists another form of the same index.
    private mutating func group(_ suite: AptSuiteReader.Suite, folder: String, pool: [String]) -> PublishGroup {
        var forms: [String: Int] = [:]
        for index in suite.plan.files { forms[AptSelection.split(index.file.path).base, default: 0] += 1 }
        var indexes: [PublishedFile] = []
        for index in suite.plan.files {
            let (dest, url) = (folder + index.file.path, suite.url + index.file.path)
            let optional: Bool
            if let bytes = suite.read[index.file.path] {
                indexes.append(PublishedFile(dest: dest, source: .bytes(bytes), url: url))
                optional = false
            } else {
                optional = (forms[AptSelection.split(index.file.path).base] ?? 1) > 1
                let file = index.file
                expansion.items.append(item(url: url, dest: dest, sha256: file.sha256, sha512: file.sha512, size: file.size))
                indexes.append(PublishedFile(dest: dest, source: .item, url: url, optional: optional))
            }
            if let byHash = index.byHash {
                indexes.append(PublishedFile(dest: folder + byHash, source: .sameAs(dest), url: url, optional: optional))
            }
        }
        var release: [PublishedFile] = []
        if let bytes = suite.releaseFile {
            release.append(PublishedFile(dest: folder + "Release", source: .bytes(bytes), url: suite.url + "Release"))
        }
        if let bytes = suite.releaseSignature {
            release.append(PublishedFile(dest: folder + "Release.gpg", source: .bytes(bytes), url: suite.url + "Release.gpg"))
        }
        let inRelease = suite.inRelease.map {
            [PublishedFile(dest: folder + "InRelease", source: .bytes($0), url: suite.url + "InRelease")]
        }
        let phases = [pool.map { PublishedFile(dest: $0, source: .item, url: "") }, indexes, release, inRelease ?? []]
        return PublishGroup(folder: set.dest, name: "the suite \(suite.name) of \(catalog.base)", phases: phases)
    }
}
