import Foundation

/// SHA256SUMS- and SHA512SUMS-style files (`HASH  NAME` or `HASH *NAME`),
/// docs/manifest.md#checksums-lists: `checksums:`. A 64-digit hash is SHA-256, a 128-digit one
/// SHA-512.
enum ChecksumFiles {
    /// Why a list cannot give hashes: a name listed twice with two hashes.
    struct Conflict: Error {
        let message: String
    }

    /// Maps each listed name, resolved against the file's own URL, to its hash. Lines
    /// are read as a set's list reads them (`SumsList`); one that is not `HASH NAME`
    /// is skipped. A name listed twice with two hashes of one kind makes the list
    /// useless (which one did the publisher mean?): it throws.
    static func parse(_ text: String, baseURL: String) throws(Conflict) -> [String: String] {
        var sums: [String: String] = [:]
        var lines: [String: Int] = [:]
        let base = baseURL.split(separator: "?", maxSplits: 1)[0]
        let folder = base.lastIndex(of: "/").map { String(base[...$0]) } ?? String(base)
        for entry in (try? SumsList(parsing: text, lenient: true))?.entries ?? [] {
            let url = entry.name.contains(ascii: "://") ? entry.name : folder + entry.name
            if let earlier = sums[url], earlier.utf8.count == entry.hash.utf8.count, earlier != entry.hash {
                throw Conflict(
                    message:
                        "line \(entry.line): '\(Rules.printable(entry.name))' is listed again with another hash (line \(lines[url] ?? 0))"
                )
            }
            sums[url] = entry.hash
            lines[url] = entry.line
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
                let isSHA512 = hash.utf8.count == 128
                let name = isSHA512 ? "sha512" : "sha256"
                if let existing = isSHA512 ? plan.items[index].sha512 : plan.items[index].sha256, existing != hash {
                    throw ManifestError(
                        file: plan.manifest.path, location: item.sha256Location ?? source.location,
                        message:
                            "\(name) of '\(item.dest)' (\(existing)) conflicts with \(Redactor.redactURLAndQuery(source.url)), which lists \(hash)"
                    )
                }
                if isSHA512 { plan.items[index].sha512 = hash } else { plan.items[index].sha256 = hash }
            }
        }
    }
}
