import Foundation

/// The `DEST.jgd` resume record (docs/engine.md#resume-state): enough to continue a download
/// without trusting a byte it cannot vouch for.
///
/// It is written only after the part file's data is `fdatasync`ed, via a temporary
/// file and `rename`, so a crash leaves either the previous record or this one,
/// never a torn mix, and never one that claims bytes a power cut could lose.
struct ResumeState: Codable, Equatable, Sendable {
    static let formatName = "jgmirror-resume"
    static let currentVersion = 1

    var format: String = ResumeState.formatName
    var version: Int = ResumeState.currentVersion
    /// The primary URL without its credentials and query values, for people: the
    /// file may be published with the tree, and a query may hold a token.
    var url: String
    /// The SHA-256 of the primary URL without its credentials and the values of the
    /// query parameters named in `redact` (`TransferRequest.resumeIdentity`: a
    /// password or token changed in the URL is the same file, and an unsalted digest
    /// of a secret is kept out of the file), which the record must match. Records
    /// written before it existed are matched by `url`, which then kept the query.
    var urlSHA256: String?
    var etag: String?
    var lastModified: String?
    /// Total length of the remote file.
    var length: Int64
    /// Byte ranges still missing, as `[start, end)` pairs.
    var missing: [[Int64]]
    /// Set when written without `fsync` (`--no-fsync`): the boot it was written in.
    /// After a restart the part file may have lost what the record claims.
    var unsyncedBoot: String?

    enum CodingKeys: String, CodingKey {
        case format, version, url, etag
        case urlSHA256 = "url_sha256"
        case lastModified = "last_modified"
        case length, missing
        case unsyncedBoot = "unsynced_boot"
    }

    /// The kernel's identifier of this boot; nil where it cannot be read.
    static let bootID: String? = {
        guard let data = FileManager.default.contents(atPath: "/proc/sys/kernel/random/boot_id") else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }()

    init(url: String, validators: Validators, length: Int64, missing: [ByteRange]) {
        self.url = Redactor.redactURLAndQuery(url)
        urlSHA256 = Self.digest(of: url)
        etag = validators.etag
        lastModified = validators.lastModified
        self.length = length
        self.missing = missing.map { [$0.lower, $0.upper] }
    }

    private static func digest(of url: String) -> String? { SHA256.hex(of: Array(Redactor.redactURL(url).utf8)) }

    var missingRanges: [ByteRange] { missing.map { ByteRange(lower: $0[0], upper: $0[1]) } }
    var validators: Validators { Validators(etag: etag, lastModified: lastModified) }

    /// What loading found.
    enum Loaded {
        case none
        case valid(ResumeState)
        /// Present but unusable; the reason goes into the report.
        case discarded(String)
    }

    /// Reads the record at `path` and checks it against the item and its part file.
    static func load(path: String, url: String, partSize: Int64?, root: RootDirectory) -> Loaded {
        guard let data = read(path, root: root) else { return .none }
        guard let state = try? JSONDecoder().decode(ResumeState.self, from: data) else {
            return .discarded("resume state \(path) was unreadable (torn or foreign); restarted from zero")
        }
        guard state.format == formatName, state.version == currentVersion else {
            return .discarded("resume state \(path) has an unknown format; restarted from zero")
        }
        if let boot = state.unsyncedBoot, boot != bootID {
            return .discarded("resume state \(path) was written without fsync before a restart; restarted from zero")
        }
        guard state.urlSHA256.map({ $0 == digest(of: url) }) ?? (state.url == Redactor.redactURL(url)) else {
            return .discarded("resume state \(path) belongs to another URL; restarted from zero")
        }
        guard let partSize else {
            return .discarded("resume state \(path) has no part file beside it; restarted from zero")
        }
        guard state.length > 0, partSize == state.length else {
            return .discarded("part file does not match its resume state; restarted from zero")
        }
        let ranges = state.missingRanges
        let wellFormed =
            state.missing.allSatisfy { $0.count == 2 }
            && ranges.allSatisfy { $0.lower >= 0 && $0.lower < $0.upper && $0.upper <= state.length }
            && ByteRange.normalized(ranges) == ranges
        guard wellFormed else { return .discarded("resume state \(path) is inconsistent; restarted from zero") }
        return .valid(state)
    }

    /// The whole file at `path` below `root`; nil when it cannot be read.
    private static func read(_ path: String, root: RootDirectory) -> Data? {
        guard let fd = try? root.openFile(path, flags: O_RDONLY | O_NONBLOCK) else { return nil }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile()
    }

    /// Writes atomically: temporary file, `fsync` (when `durable`), `rename`.
    func write(to path: String, durable: Bool, root: RootDirectory) throws(TransferError) {
        let temporary = path + ".tmp"
        let data: Data
        do { data = try JSONEncoder().encode(self) } catch {
            throw TransferError(code: .ioError, message: "cannot encode resume state: \(error)")
        }
        try root.replaceFile(path, with: data, temporary: temporary, exclusive: false, durable: durable)
    }
}

/// What identifies one version of a remote file, for `If-Range` (docs/engine.md#resume-state).
struct Validators: Sendable, Equatable {
    var etag: String?
    var lastModified: String?
    /// They came with a response made too soon after the file's last change to tell a
    /// change in that same second (`proveNothing`): good for this run's requests, never
    /// kept for a later run's conditions (`lasting`).
    var racy = false

    /// The value for `If-Range`: a strong ETag, else Last-Modified (weak ETags may
    /// not be used there, RFC 9110 §13.1.5).
    var ifRange: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }

    /// Whether `other` names a different version; unknown on either side is no evidence.
    /// ETags compare weakly (RFC 9110 §8.8.3.2): Apache marks a fresh file's ETag weak
    /// for a second, then strong, without the file changing.
    func conflicts(with other: Validators) -> Bool {
        if let a = etag, let b = other.etag { return Self.opaque(a) != Self.opaque(b) }
        if let a = lastModified, let b = other.lastModified { return a != b }
        return false
    }

    /// Whether `other` positively names this version: no conflict, and an ETag or a
    /// Last-Modified that both sides have and agree on.
    func sameVersion(as other: Validators) -> Bool {
        guard !conflicts(with: other) else { return false }
        if let a = etag, let b = other.etag, Self.opaque(a) == Self.opaque(b) { return true }
        if let a = lastModified, let b = other.lastModified, a == b { return true }
        return false
    }

    private static func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...] }
}
