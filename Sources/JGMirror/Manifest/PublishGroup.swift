import Foundation

/// Files of one set that become visible in order (docs/publishing.md#published-lists):
/// the files of a phase are placed only once every file of the earlier phases is in
/// place, and a file that did not reach its place holds back every later phase, whose
/// previous copies stay (and stay true to what readers hold). A `sums:` set with
/// `publish: true`: its files, then its list and signature. An apt suite: its pool
/// files, then its indexes, then `Release` and `Release.gpg`, then `InRelease`
/// (docs/publishing.md#published-lists).
public struct PublishGroup: Sendable, Equatable {
    /// The set's folder (`""`: the root, else ending in `/`).
    public var folder: String
    /// What messages call the group: a list's URL, an apt suite.
    public var name: String
    /// The files, phase by phase, the first placed first.
    public var phases: [[PublishedFile]]
    /// Where the group is placed instead of the tree's root, by the same destinations:
    /// the snapshot a set published as snapshots of its own is building (`SnapshotTree`).
    public var placedUnder: String?

    public init(folder: String, name: String, phases: [[PublishedFile]]) {
        self.folder = folder
        self.name = name
        self.phases = phases
    }

    /// The files placed from bytes the run holds (not items of the plan): names the
    /// group produces, which `--delete` keeps.
    public var heldDests: [String] {
        phases.flatMap { $0.filter { $0.source != .item }.map(\.dest) }
    }

    /// The items of the plan whose placement waits for an earlier phase, by destination.
    public var gatedItems: [String] {
        phases.dropFirst().flatMap { $0.filter { $0.source == .item }.map(\.dest) }
    }

    /// The items of the plan the server may lack (`PublishedFile.optional`), by destination.
    public var optionalItems: [String] {
        phases.flatMap { $0.filter { $0.source == .item && $0.optional }.map(\.dest) }
    }

    /// The file name a published list or signature takes from its URL: the last name of
    /// the URL's path, percent-decoded; nil when there is none or it could not be a
    /// file's name in a folder (`.`, `..`, a `/` or NUL in it).
    public static func fileName(of url: String) -> String? {
        guard let parsed = URLComponents(string: url) else { return nil }
        let path = parsed.percentEncodedPath
        guard let last = path.split(separator: "/", omittingEmptySubsequences: false).last,
            let name = String(last).removingPercentEncoding
        else { return nil }
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else { return nil }
        return name
    }
}

/// One file of a `PublishGroup`.
public struct PublishedFile: Sendable, Equatable {
    /// Where it goes, relative to the root.
    public var dest: String
    /// Where its bytes come from.
    public var source: Source
    /// Its URL, as the manifest or the list names it, for the report (redacted there).
    public var url: String
    /// The server may lack it: a form of an apt index that Release lists beside others
    /// (Debian lists a plain `Packages` it does not serve). An item that the server
    /// answers 404 or 410 for is `not_served`, no failure, and holds back no later
    /// phase; a `sameAs` copy of such a file is left out too.
    public var optional = false

    /// Where a published file's bytes come from.
    public enum Source: Sendable, Equatable {
        /// An item of the plan with this destination, fetched and verified as any other;
        /// in a phase after the first, its verified bytes wait for that phase.
        case item
        /// Exactly these bytes, verified already (a list, a signature, a `Release`).
        case bytes(Data)
        /// The same bytes as the group's file at this destination, placed in an earlier
        /// phase or earlier in this one: a hard link to it (an index's `by-hash` copy).
        case sameAs(String)
    }

    public init(dest: String, source: Source, url: String, optional: Bool = false) {
        self.dest = dest
        self.source = source
        self.url = url
        self.optional = optional
    }
}
