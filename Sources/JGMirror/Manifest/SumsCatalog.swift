/// A set whose files a checksums list names (`sums:`, docs/manifest.md#sets): every
/// `HASH  NAME` line of `SHA256SUMS` or `SHA512SUMS` becomes an item, its URL the name
/// resolved against the list's, its destination the set's folder plus the name.
struct SumsCatalog: SetCatalog {
    static let key = "sums"
    static let naming = "'sums' (the URL of its checksums list)"
    static let place = OptionRow.Place.sums
    /// A list's files go as soon as they leave it, unless the set says otherwise.
    static let defaultKeepRemoved = 0.0

    /// URL of the list (`SHA256SUMS`, `SHA512SUMS`).
    var sums = ""
    /// Where `sums` is, for errors about the list's lines.
    var sumsLocation: SourceLocation
    /// Globs on the listed names (fnmatch); empty means every name.
    var include: [String] = []
    /// Globs on the listed names to leave out.
    var exclude: [String] = []
    /// Folders holding the same files; each listed name resolved against each.
    var mirrorsBase: [String] = []
    /// `signature:` as written, until `checked` pairs it with the keyring.
    private var signatureURL: (url: String, location: SourceLocation)?
    /// The list's detached signature and the keyring that must have made it.
    var signature: ListSignature?

    init(at location: SourceLocation) { sumsLocation = location }

    init(sums: String, at location: SourceLocation) {
        self.sums = sums
        sumsLocation = location
    }

    var source: String { sums }
    var urls: [String] { [sums] + mirrorsBase + (signature.map { [$0.url] } ?? []) }
    var keyring: String? { signature?.keyring }

    mutating func read(_ key: String, at location: SourceLocation, with parser: inout ManifestParser) throws(ManifestError) {
        switch key {
        case "sums":
            let (url, urlLocation) = try parser.readString(key)
            try parser.checkURL(url, at: urlLocation)
            sums = url
            sumsLocation = urlLocation
        case "include": include = try parser.readStringList(key).map(\.0)
        case "exclude": exclude = try parser.readStringList(key).map(\.0)
        case "mirrors_base":
            for (mirror, mirrorLocation) in try parser.readStringList(key) {
                try parser.checkURL(mirror, at: mirrorLocation)
                mirrorsBase.append(mirror)
            }
        case "signature":
            let (url, urlLocation) = try parser.readString(key)
            try parser.checkURL(url, at: urlLocation)
            signatureURL = (url, urlLocation)
        default:
            throw parser.error(location, "unknown key '\(key)' in a sums set")
        }
    }

    func checked(_ set: ManifestSet, keyring: (String, SourceLocation)?, with parser: ManifestParser) throws(ManifestError)
        -> SumsCatalog
    {
        var checked = self
        switch (signatureURL, keyring) {
        case (nil, nil): break
        case (nil, let keyring?):
            throw parser.error(keyring.1, "'keyring' needs 'signature' (the URL of the list's detached signature)")
        case (let url?, nil): throw parser.error(url.location, "'signature' needs 'keyring' (the keys that may sign the list)")
        case (let url?, let keyring?):
            checked.signature = ListSignature(url: url.url, keyring: try parser.resolveKeyring(keyring))
        }
        if set.publish { try checked.checkPublishedNames(at: set.publishLocation, with: parser) }
        return checked
    }

    /// The names a published list and its signature take must be file names, and two.
    private func checkPublishedNames(at location: SourceLocation, with parser: ManifestParser) throws(ManifestError) {
        guard let name = PublishGroup.fileName(of: sums) else {
            let url = Redactor.redactURLAndQuery(sums)
            throw parser.error(location, "'publish' needs a list URL that ends in a file name; '\(url)' names none")
        }
        guard let signature else { return }
        guard let signatureName = PublishGroup.fileName(of: signature.url) else {
            let url = Redactor.redactURLAndQuery(signature.url)
            throw parser.error(location, "'publish' needs a signature URL that ends in a file name; '\(url)' names none")
        }
        if signatureName == name {
            throw parser.error(location, "'publish' would place the list and its signature under one name, '\(name)'")
        }
    }
}
