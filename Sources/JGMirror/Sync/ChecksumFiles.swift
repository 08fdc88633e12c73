import Foundation

/// SHA256SUMS-style files (`HASH  NAME` or `HASH *NAME`), SPEC §3 `checksums:`.
enum ChecksumFiles {
    /// Maps each listed name, resolved against the file's own URL, to its hash.
    static func parse(_ text: String, baseURL: String) -> [String: String] {
        var sums: [String: String] = [:]
        let base = baseURL.split(separator: "?", maxSplits: 1)[0]
        let folder = base.lastIndex(of: "/").map { String(base[...$0]) } ?? String(base)
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard line.count > 66 else { continue }
            let hash = line.prefix(64).lowercased()
            guard hash.allSatisfy(\.isHexDigit) else { continue }
            var name = line.dropFirst(64).drop(while: { $0 == " " || $0 == "\t" })
            if name.hasPrefix("*") { name = name.dropFirst() }
            if name.hasPrefix("./") { name = name.dropFirst(2) }
            guard !name.isEmpty else { continue }
            let url = name.contains(ascii: "://") ? String(name) : folder + String(name)
            sums[url] = hash
        }
        return sums
    }

    /// Gives items without an inline checksum the one a sums file lists for their URL
    /// or a mirror; a disagreement with an inline checksum is a manifest error.
    static func apply(_ sums: [(source: ChecksumSource, hashes: [String: String])], to plan: inout Plan) throws(ManifestError) {
        for index in plan.items.indices {
            let item = plan.items[index]
            for (source, hashes) in sums {
                guard let hash = ([item.url] + item.mirrors).lazy.compactMap({ hashes[$0] }).first else { continue }
                if let existing = plan.items[index].sha256, existing != hash {
                    throw ManifestError(
                        file: plan.manifest.path, location: item.sha256Location ?? source.location,
                        message: "sha256 of '\(item.dest)' (\(existing)) conflicts with \(Redactor.redactURL(source.url)), which lists \(hash)")
                }
                plan.items[index].sha256 = hash
            }
        }
    }
}
