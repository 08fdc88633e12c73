import Foundation

/// Where a tree keeps the checksums lists (`sets:` sums and `checksums:` files) its
/// syncs fetched: `ROOT/.jgmirror/lists/`, one file per list, named by the SHA-256 of
/// its URL without secrets (docs/state.md#lists-and-their-cache, `path(for:)`). The next run asks
/// for each list with `If-None-Match` / `If-Modified-Since` and, on `304`, uses the cached copy.
///
/// Nothing in it is needed for correctness: a missing, unreadable or damaged copy
/// costs an unconditional fetch. A signed list is checked with gpgv against the bytes
/// actually used, cached or not, every run. `plan` and `verify` use a read-only cache:
/// they send the conditions and take a `304`'s cached copy, but never write the tree.
public struct ListCache: Sendable {
    /// The mirror root the cache lives under.
    public var root: String
    /// Use the cached copies but never write (`plan`, `verify`).
    public var readOnly: Bool
    /// `fsync` a new copy before renaming it into place (off with `--no-fsync`).
    public var durable = true
    /// Query parameters whose values a list's cache name leaves out (the manifest's
    /// `redact` names, in `defaults` and on its sets).
    public var redact: [String] = []

    public init(root: String, readOnly: Bool = false) {
        self.root = root
        self.readOnly = readOnly
    }

    /// The cache of the tree `manifest` mirrors into: its `root` (or `override`, as
    /// `--root` gives it), resolved as `Plan` resolves it.
    public init(manifest: Manifest, rootOverride: String?, readOnly: Bool = false) {
        self.init(root: Plan.resolveRoot(manifest: manifest, override: rootOverride), readOnly: readOnly)
        redact = (manifest.defaults.redact ?? []) + manifest.sets.flatMap { $0.settings.redact ?? [] }
    }

    /// `.jgmirror/lists`, relative to the root.
    static let folder = StateFolder.name + "/lists"

    /// The cached copy's path for `url`: named by the SHA-256 of the URL without its
    /// credentials and the values of the query parameters named in `redact`, so that no
    /// name in the tree is a digest of a secret (a rotated token names the same list).
    func path(for url: String) -> String {
        let name = Redactor(redact: redact).redact(url: url)
        return root + "/" + Self.folder + "/" + (SHA256.hex(of: Array(name.utf8)) ?? "unnamed")
    }

    /// The intact cached copy of `url`, or nil (none, unreadable, a symlink on the way,
    /// damaged, larger than `limit`).
    func load(_ url: String, limit bodyLimit: Int64 = ListFetcher.sizeLimit) -> CachedList? {
        guard let directory = try? RootDirectory(path: root),
            let fd = try? directory.openFile(path(for: url), flags: O_RDONLY | O_NONBLOCK)
        else { return nil }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let limit = Int(bodyLimit) + CachedList.maxHeader + 1
        guard let data = try? handle.read(upToCount: limit + 1), data.count <= limit else { return nil }
        return CachedList(decoding: data, url: url)
    }

    /// Replaces the cached copy of `list.url` atomically: a temporary file beside it,
    /// `fsync`, `rename`, through the root's descriptor (no symlink is followed).
    /// Returns the one line that says why it could not, or nil; nothing when read-only.
    func store(_ list: CachedList) -> String? {
        guard !readOnly else { return nil }
        let path = path(for: list.url)
        let temporary = path + ".tmp-\(getpid())-\(UUID().uuidString.prefix(8))"
        // A first sync's root may not be there yet; RootDirectory says so if it cannot be made.
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        do throws(TransferError) {
            let directory = try RootDirectory(path: root)
            try directory.makeFolders(root + "/" + Self.folder)
            try directory.replaceFile(path, with: list.encoded(), temporary: temporary, exclusive: true, durable: durable)
            if durable { directory.syncFolder(root + "/" + Self.folder) }
            return nil
        } catch {
            return
                "cannot cache the list \(Redactor.redactURLAndQuery(list.url)) (\(error.message)); the next run fetches it whole"
        }
    }
}
