/// What an `apt:` set wants of each suite: its components, architectures, and
/// whether sources too. `plan` turns a Release into the index files to mirror and
/// the ones to read, as apt and debmirror choose them:
///
/// - per component and architecture: `binary-ARCH/Packages` in every form Release
///   lists, `binary-ARCH/Release`, `Contents-ARCH` and `Contents-udeb-ARCH` (in the
///   component, and at the suite's top as older archives place them),
///   `dep11/Components-ARCH.yml` and `dep11/CID-Index-ARCH.json` (AppStream),
///   `cnf/Commands-ARCH` (command-not-found);
/// - per component: `i18n/Translation-*` for every language and `i18n/Index`,
///   `dep11/icons-*`;
/// - with sources: `source/Sources`, `source/Release`, `Contents-source`;
/// - `all` joins the architectures whenever Release lists it (apt fetches
///   `binary-all` then; debmirror always does);
/// - left out: other components and architectures, and the `*.diff/Index` of
///   apt's pdiffs, whose patches Release does not list (apt falls back to the whole
///   index without them, as it does for debmirror's default mirrors).
struct AptSelection: Sendable, Equatable {
    var components: [String]
    var architectures: [String]
    var sources = false

    /// Compression suffixes Release may list for an index; only `CompressionFormat`'s are read.
    static let suffixes = [".xz", ".gz", ".bz2", ".lzma", ".zst", ".lz4", ""]

    /// The index files of `release` this selection mirrors and reads. Throws when it
    /// asks for a component or an architecture the Release does not have, or when
    /// nothing of it is there to read (a set must never stand for an empty suite).
    func plan(_ release: AptRelease, file: String) throws(AptError) -> AptIndexPlan {
        // `main/debian-installer` lies inside `main`: Debian's Components lists only the latter.
        let listed = { (component: String) in
            release.components.contains(component)
                || release.components.contains(String(component.prefix { $0 != "/" }))
        }
        if !release.components.isEmpty, let missing = components.first(where: { !listed($0) }) {
            throw .notInRelease(
                file: file, "has no component '\(missing)' (it lists \(release.components.joined(separator: " ")))")
        }
        if let source = architectures.first(where: { $0 == "source" }) {
            throw .notInRelease(file: file, "'\(source)' is not an architecture; 'sources: true' mirrors the sources")
        }
        if !release.architectures.isEmpty,
            let missing = architectures.first(where: { !release.architectures.contains($0) })
        {
            throw .notInRelease(
                file: file,
                "has no architecture '\(missing)' (it lists \(release.architectures.joined(separator: " ")))")
        }
        var architectures = architectures
        if release.architectures.contains("all"), !architectures.contains("all") { architectures.append("all") }
        var plan = AptIndexPlan()
        var byHashTaken = Set<String>()
        for entry in release.files {
            guard let kind = kind(of: entry.path, architectures: architectures) else { continue }
            var byHash: String?
            if release.acquireByHash, kind != .componentRelease, byHashTaken.insert(entry.byHashPath).inserted {
                byHash = entry.byHashPath
            }
            plan.files.append(.init(file: entry, kind: kind, byHash: byHash))
        }
        plan.packages = try readable(.packages, in: plan.files, file: file)
        plan.sources = try readable(.sources, in: plan.files, file: file)
        guard !plan.packages.isEmpty else {
            throw .notInRelease(
                file: file,
                "lists no Packages index for components \(components.joined(separator: " ")) and architectures "
                    + architectures.joined(separator: " "))
        }
        if sources, plan.sources.isEmpty {
            throw .notInRelease(file: file, "lists no Sources index for components \(components.joined(separator: " "))")
        }
        return plan
    }

    /// The indexes of `kind` among `files`, grouped by their base path, each with the
    /// forms jgmirror reads; throws for an index Release lists only in other forms.
    private func readable(_ kind: AptIndexPlan.Kind, in files: [AptIndexPlan.IndexFile], file: String)
        throws(AptError) -> [AptIndexPlan.Readable]
    {
        var groups: [AptIndexPlan.Readable] = []
        var position: [String: Int] = [:]
        for entry in files where entry.kind == kind {
            let (base, format) = Self.split(entry.file.path)
            if position[base] == nil {
                position[base] = groups.count
                groups.append(.init(base: base, forms: []))
            }
            if let format { groups[position[base] ?? 0].forms.append((format, entry.file)) }
        }
        for index in groups.indices {
            groups[index].forms.sort { Self.preference($0.format) < Self.preference($1.format) }
            if groups[index].forms.isEmpty {
                throw .notInRelease(
                    file: file, "lists \(groups[index].base) only in forms jgmirror cannot read (it reads .xz, .gz and plain)")
            }
        }
        return groups
    }

    private static func preference(_ format: CompressionFormat) -> Int {
        CompressionFormat.allCases.firstIndex(of: format) ?? 0
    }

    /// `path` without its compression suffix, and the form jgmirror reads it in (nil
    /// for a form it only mirrors, such as `.bz2`).
    static func split(_ path: String) -> (base: String, format: CompressionFormat?) {
        for format in CompressionFormat.allCases where format != .plain && path.hasSuffix(format.suffix) {
            return (String(path.dropLast(format.suffix.count)), format)
        }
        for suffix in suffixes where !suffix.isEmpty && path.hasSuffix(suffix) {
            return (String(path.dropLast(suffix.count)), nil)
        }
        return (path, .plain)
    }
}
