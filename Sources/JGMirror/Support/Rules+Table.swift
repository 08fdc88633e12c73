/// The option table: every manifest key and every bounded option of the command line,
/// one `OptionRow` each (docs/manifest.md#top-level-keys). The manifest parser takes
/// the keys each mapping allows from it (`keys(in:)`), `jgmirror --help` its manifest
/// summary (`manifestSummary`), and `scripts/docs.sh` the key reference of
/// docs/manifest.md (`ReferencePage`). A new key is a row here, then a `case` in the
/// parser; the reference and the help follow.
extension Rules {
    /// Every row, in the order the reference lists them: the top level, an item's
    /// keys, the keys items, sets and `defaults` share, a set's and a checksums
    /// list's own, the host options, then the command line's own options.
    public static let table: [OptionRow] =
        topRows + itemRows + [connections.row, retriesRow, minSegment.row, timeout.row] + requestRows + setRows
        + [connectTimeout.row, minRate.row, hostGrace.row, maxWait.row] + commandLineRows

    /// The keys a mapping of `place` allows, in the table's order.
    public static func keys(in place: OptionRow.Place) -> [String] {
        table.compactMap { row in row.places.contains(place) ? row.key : nil }
    }

    /// The manifest in one paragraph, for `--help` and the man page: each mapping and
    /// the keys it takes.
    public static var manifestSummary: String {
        func list(_ place: OptionRow.Place, leaving shared: [String] = []) -> String {
            keys(in: place).filter { !shared.contains($0) }.joined(separator: ", ")
        }
        let shared = keys(in: .defaults).filter { keys(in: .item).contains($0) }
        return """
            MANIFEST (version 1): root (relative to the manifest), defaults (\(list(.defaults))), \
            hosts (per origin scheme://host[:port]: \(list(.origin))), \
            checksums (SHA256SUMS-style lists: \(list(.checksums))), \
            sets (every file a checksums list or an apt repository names becomes an item: \
            \(list(.sums)); or \(list(.apt)); and \(list(.set, leaving: shared)) and any item option) and items (\(list(.item, leaving: shared + ["link"])) and the \
            defaults' item options; or link: TARGET with \(list(.link, leaving: ["link"])), a relative \
            symlink placed after the files). Every mistake is reported as FILE:LINE:COLUMN and exits 2.
            """
    }

    /// The manifest's top level.
    static let topRows: [OptionRow] = [
        OptionRow(
            key: "version", places: [.top], type: "whole number", defaultText: "required", bounds: "1",
            help: "The manifest's format; any other version is refused", example: "1"),
        OptionRow(
            key: "root", places: [.top], flags: ["--root"], type: "path", defaultText: "the manifest's folder",
            help: "The mirror's root, relative to the manifest's folder", example: "/srv/mirror"),
        OptionRow(
            key: "defaults", places: [.top], type: "mapping", defaultText: "none",
            help: "Item options every item and set takes unless it gives its own, and the host options",
            example: "{connections: 8, timeout: 1m}"),
        OptionRow(
            key: "hosts", places: [.top], type: "mapping of origin to host options", defaultText: "none",
            help: "Host options for one origin each (scheme://host[:port])",
            example: "{https://mirror.example.net: {host_grace: 2m}}"),
        OptionRow(
            key: "checksums", places: [.top], type: "list of checksums lists", defaultText: "none",
            help: "Lists the items take their checksums from", example: "[{url: https://example.org/SHA256SUMS}]"),
        OptionRow(
            key: "sets", places: [.top], type: "list of sets", defaultText: "none",
            help: "Lists whose every file becomes an item",
            example: "[{sums: https://example.org/24.04/SHA256SUMS, dest: ubuntu/24.04/}]"),
        OptionRow(
            key: "items", places: [.top], type: "list of items", defaultText: "required without sets",
            help: "The files and links of the mirror", example: "[{url: https://example.org/a.iso, dest: isos/}]"),
    ]

    /// The keys of an item (and of a `link:` item).
    static let itemRows: [OptionRow] = [
        OptionRow(
            key: "url", places: [.item], type: "URL", defaultText: "required",
            bounds: "http or https; at most \(maxURLLength / 1024) KiB", help: "Where the file comes from",
            example: "https://example.org/releases/os.iso"),
        OptionRow(
            key: "mirrors", places: [.item], type: "list of URLs", defaultText: "none",
            help: "The same bytes on other hosts; the item's connections are spread over them",
            example: "[https://mirror.example.net/releases/os.iso]"),
        OptionRow(
            key: "dest", places: [.item, .link], type: "path", defaultText: "the URL's file name (required for a link)",
            help: "Where the file goes, relative to the root; a trailing / keeps the URL's file name",
            example: "isos/os.iso"),
        OptionRow(
            key: "sha256", places: [.item], type: "64 hex digits", defaultText: "none: the item is unverified",
            help: "The file's SHA-256; bytes that do not match are never placed",
            example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
        OptionRow(
            key: "sha512", places: [.item], type: "128 hex digits", defaultText: "none",
            help: "The file's SHA-512, checked after the transfer", example: "cf83e135…927da3e"),
        OptionRow(
            key: "size", places: [.item], type: "size", defaultText: "none", bounds: "0 to \(formatSize(maximumSize))",
            help: "The file's length; a server that sends another fails the item (size_mismatch)", example: "4GiB"),
        tagRow,
        OptionRow(
            key: "link", places: [.item, .link], type: "relative path", defaultText: "none",
            help: "Makes dest a symlink to this target, placed after the files, instead of fetching a file",
            example: "releases/v2"),
    ]

    /// `tag`, bounded to what every JSON reader holds exactly (`tag`).
    public static let tagRow = OptionRow(
        key: "tag", places: [.item, .link, .set], flags: ["get --tag"], type: "whole number", defaultText: "none",
        bounds: "−(2^53 − 1) to 2^53 − 1", help: "A number echoed in the report, the events and JUnit", example: "7")

    /// `retries`, whose default follows `connections`.
    public static let retriesRow = OptionRow(
        key: "retries", places: OptionRow.Place.itemSettings, flags: ["--retries", "get --retries"],
        type: "whole number", defaultText: "connections / 2, at least 1",
        bounds: "\(retries.lowerBound) to \(retries.upperBound)",
        help: "Failures without progress each connection may have", example: "3")

    /// The keys items, sets and `defaults` share beyond the transfer's numbers.
    static let requestRows: [OptionRow] = [
        OptionRow(
            key: "headers", places: OptionRow.Place.itemSettings, flags: ["--header"], type: "mapping of name to value",
            defaultText: "none", help: "Request headers, sent only to the item's own origins",
            example: "{Authorization: \"Bearer ${TOKEN}\"}"),
        OptionRow(
            key: "redact", places: OptionRow.Place.itemSettings, type: "list of names", defaultText: "none",
            help: "Headers and query parameters whose values no output shows", example: "[Authorization, token]"),
        OptionRow(
            key: "tags", places: OptionRow.Place.itemSettings + [.link], flags: ["--tag", "--skip-tag"],
            type: "list of strings", defaultText: "none", help: "Labels that --tag and --skip-tag select on",
            example: "[iso, nightly]"),
        OptionRow(
            key: "insecure", places: OptionRow.Place.itemSettings, flags: ["get --insecure"], type: "true or false",
            defaultText: "false", help: "Skips TLS certificate verification; the report says so", example: "true"),
        OptionRow(
            key: "forward_headers", places: OptionRow.Place.itemSettings, type: "true or false", defaultText: "false",
            help: "Sends the headers along when a redirect leads to another origin", example: "true"),
        OptionRow(
            key: "max_size", places: OptionRow.Place.itemSettings, flags: ["--max-size"], type: "size",
            defaultText: "none", bounds: "1 to \(formatSize(maximumSize))",
            help: "The most bytes accepted for a body of unknown length (too_large)", example: "8GiB"),
        OptionRow(
            key: "refresh", places: OptionRow.Place.itemSettings, type: "conditional, always or never",
            defaultText: "conditional",
            help: "For an item without a checksum: ask whether a present file changed, fetch it again, or keep it",
            example: "never"),
    ]

    /// The keys of a set and of a `checksums:` entry beyond the item options.
    static let setRows: [OptionRow] =
        [
            OptionRow(
                key: "sums", places: [.sums], type: "URL", defaultText: "required",
                help: "The checksums list (SHA256SUMS or SHA512SUMS style) whose files become items",
                example: "https://releases.example.org/24.04/SHA256SUMS"),
            OptionRow(
                key: "url", places: [.checksums], type: "URL", defaultText: "required",
                help: "The checksums list the items take their checksums from", example: "https://example.org/SHA256SUMS"),
            OptionRow(
                key: "dest", places: [.set], type: "folder path", defaultText: "the root",
                help: "The folder the set's files land in, relative to the root (a list's names, a repository's paths)",
                example: "ubuntu/24.04/"),
            OptionRow(
                key: "include", places: [.sums], type: "list of globs", defaultText: "every name",
                help: "fnmatch globs: only the listed names that match one become items", example: "[\"*.iso\", \"*.img\"]"),
            OptionRow(
                key: "exclude", places: [.sums], type: "list of globs", defaultText: "none",
                help: "fnmatch globs: listed names that match one are left out", example: "[\"*-beta*\"]"),
            OptionRow(
                key: "mirrors_base", places: [.sums], type: "list of URLs", defaultText: "none",
                help: "Folders that hold the same files; each name is resolved against each, as mirrors",
                example: "[https://mirror.example.net/24.04/]"),
            OptionRow(
                key: "signature", places: [.sums, .checksums], type: "URL", defaultText: "none",
                help: "The list's detached signature, checked with gpgv before any hash in it is trusted",
                example: "https://releases.example.org/24.04/SHA256SUMS.gpg"),
            OptionRow(
                key: "keyring", places: [.set, .checksums], type: "path",
                defaultText: "required with signature and in apt sets",
                help:
                    "The keys that may sign the list, or an apt repository's Release (gpg --export, armored or not), relative to the manifest",
                example: "keys/release.gpg"),
            OptionRow(
                key: "publish", places: [.set], type: "true, false or snapshot", defaultText: "false",
                help:
                    "true places the verified list and signature in dest after its files; snapshot gives dest snapshots of its own",
                example: "true"),
            keep.row, keepRemoved.row,
        ] + aptRows

    /// An `apt:` set's own keys (docs/apt.md).
    static let aptRows: [OptionRow] = [
        OptionRow(
            key: "apt", places: [.apt], type: "URL", defaultText: "required",
            help: "The apt repository's base: the folder that holds dists/ and pool/", example: "https://deb.debian.org/debian"),
        OptionRow(
            key: "suites", places: [.apt], type: "list of suites", defaultText: "required",
            help: "The suites (dists/SUITE) to mirror, as a sources.list names them", example: "[bookworm, bookworm-updates]"),
        OptionRow(
            key: "components", places: [.apt], type: "list of components", defaultText: "required",
            help: "The components of each suite to mirror", example: "[main, contrib]"),
        OptionRow(
            key: "architectures", places: [.apt], type: "list of architectures", defaultText: "required",
            help: "The binary architectures to mirror; all is added where Release lists it", example: "[amd64, arm64]"),
        OptionRow(
            key: "sources", places: [.apt], type: "true or false", defaultText: "false",
            help: "Also the Sources indexes and every file of each source package", example: "true"),
    ]

    /// Options of the command line alone, with their defaults and bounds, and the
    /// fixed limits an operator meets.
    static let commandLineRows: [OptionRow] = [
        jobs.row, maxPerHost.row, retryDelay.row,
        OptionRow(
            key: nil, places: [], flags: ["--max-rate"], type: "rate", defaultText: "none",
            bounds: "1B/s to \(formatSize(rate.upperBound))/s", help: "The whole run's bytes per second", example: "20M"),
        minFree.row,
        OptionRow(
            key: nil, places: [], flags: ["--max-duration"], type: "duration", defaultText: "none",
            bounds: "\(formatDuration(maxDuration.lowerBound)) to \(formatDuration(maxDuration.upperBound))",
            help: "The run's deadline: it stops there as on SIGINT, and exits 1", example: "50m"),
        maxDeleteCount.row, maxDeleteShare.row,
        OptionRow(
            key: nil, places: [], flags: ["--shard I/N", "--shard-count"], type: "count", defaultText: "none",
            bounds: "\(shardCount.lowerBound) to \(shardCount.upperBound)", help: "Shards a run is split into (N)",
            example: "0/8"),
    ]
}
