import Foundation

/// A checksums list as a sync last fetched it, with the validators it came with: the
/// contents of one file under `ROOT/.jgmirror/lists/` (docs/state.md#lists-and-their-cache).
///
/// The file is one line of JSON (the URL without its credentials and query values,
/// the validators, the body's length and SHA-256), a newline, then the body as
/// served; the file's name is the SHA-256 of the whole URL. Keeping the validators
/// in the same file as the bytes they describe means one `rename` replaces both, so
/// no reader ever pairs one version's ETag with another version's bytes. A file whose header
/// does not parse, names another URL, or whose body has another length or SHA-256 is
/// no cached list at all (the next fetch is unconditional).
///
/// The digest catches damage, not an attacker who can write `.jgmirror/`: a signed
/// list is checked with gpgv against these bytes every time they are used.
struct CachedList: Sendable, Equatable {
    /// The list's URL, as the manifest names it.
    var url: String
    var validators: Validators
    /// The list's bytes.
    var body: Data

    /// Longest header line read back; a longer first line is damage.
    static let maxHeader = 64 << 10

    private struct Header: Codable {
        var format: Int
        var url: String
        var etag: String?
        var lastModified: String?
        var length: Int
        var sha256: String

        enum CodingKeys: String, CodingKey {
            case format, url, etag, length, sha256
            case lastModified = "last_modified"
        }
    }

    /// The file's bytes.
    func encoded() -> Data {
        let header = Header(
            format: 1, url: Redactor.redactURLAndQuery(url), etag: validators.etag, lastModified: validators.lastModified,
            length: body.count,
            sha256: SHA256.hex(of: [UInt8](body)) ?? "")
        // JSONEncoder escapes every control character, so the header is one line.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var data = (try? encoder.encode(header)) ?? Data()
        data.append(0x0A)
        data.append(body)
        return data
    }

    /// The cached list of `url` in `data`, or nil when `data` is not one intact.
    init?(decoding data: Data, url: String) {
        guard let newline = data.prefix(Self.maxHeader).firstIndex(of: 0x0A),
            let header = try? JSONDecoder().decode(Header.self, from: data[data.startIndex..<newline]),
            header.format == 1, header.url == Redactor.redactURLAndQuery(url)
        else { return nil }
        let body = data[(newline + 1)...]
        guard body.count == header.length, SHA256.hex(of: [UInt8](body)) == header.sha256 else { return nil }
        self.init(url: url, validators: Validators(etag: header.etag, lastModified: header.lastModified), body: Data(body))
    }

    init(url: String, validators: Validators, body: Data) {
        self.url = url
        self.validators = validators
        self.body = body
    }

    /// The request lines that ask for the list only if it changed: `If-None-Match`
    /// with the ETag (which compares weakly, RFC 9110 §13.1.2), else
    /// `If-Modified-Since` with the Last-Modified; none without either.
    var conditions: [String] {
        if let etag = validators.etag { return ["If-None-Match: \(etag)"] }
        if let lastModified = validators.lastModified { return ["If-Modified-Since: \(lastModified)"] }
        return []
    }
}
