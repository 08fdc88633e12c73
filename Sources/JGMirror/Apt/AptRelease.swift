/// A suite's `Release`: the text InRelease signs, or the `Release` file that
/// Release.gpg signs. It names every index of the suite with its size and hashes;
/// everything a mirror fetches of the suite is checked against it.
struct AptRelease: Sendable, Equatable {
    /// One file Release lists.
    struct File: Sendable, Equatable {
        /// Relative to the suite's folder (`dists/SUITE/`): `main/binary-amd64/Packages.xz`.
        var path: String
        var size: Int64
        /// Lower-case hex.
        var sha256: String
        /// Lower-case hex, when Release has a `SHA512:` section that lists the file.
        var sha512: String?

        /// The copy apt asks for when Release says `Acquire-By-Hash: yes`: in the
        /// file's folder, `by-hash/` and the strongest hash Release gives it (apt
        /// takes SHA512 over SHA256), e.g. `main/binary-amd64/by-hash/SHA256/<hex>`.
        var byHashPath: String {
            let folder = path.lastIndex(of: "/").map { String(path[...$0]) } ?? ""
            if let sha512 { return folder + "by-hash/SHA512/" + sha512 }
            return folder + "by-hash/SHA256/" + sha256
        }
    }

    var suite: String?
    var codename: String?
    /// Seconds since the epoch.
    var date: Int64?
    var validUntil: Int64?
    /// `Acquire-By-Hash: yes`: apt fetches indexes by their hash (`byHashPath`).
    var acquireByHash = false
    var components: [String] = []
    var architectures: [String] = []
    /// In the order of the `SHA256:` section.
    var files: [File] = []

    /// The fields read; the rest (Origin, Label, Description, MD5Sum…) decide nothing.
    static let fields: Set<String> = [
        "Suite", "Codename", "Date", "Valid-Until", "Acquire-By-Hash", "Components", "Architectures", "SHA256", "SHA512",
    ]

    /// Reads the Release in `bytes`; `file` names it in errors.
    init(parsing bytes: [UInt8], file: String) throws(AptError) {
        let paragraphs: [Deb822Paragraph]
        do { paragraphs = try Deb822Reader.paragraphs(bytes, wanted: Self.fields) } catch { throw AptError(error, file: file) }
        guard let paragraph = paragraphs.first else { throw .malformed(file: file, line: 1, "no fields") }
        guard paragraphs.count == 1 else {
            throw .malformed(file: file, line: paragraphs[1].line, "a second paragraph; a Release has one")
        }
        suite = paragraph["Suite"]
        codename = paragraph["Codename"]
        date = try Self.date(paragraph.field("Date"), file: file)
        validUntil = try Self.date(paragraph.field("Valid-Until"), file: file)
        acquireByHash = paragraph["Acquire-By-Hash"]?.lowercased() == "yes"
        components = paragraph["Components"].map { Self.words($0) } ?? []
        architectures = paragraph["Architectures"].map { Self.words($0) } ?? []
        guard let sha256 = paragraph.field("SHA256") else {
            throw .malformed(
                file: file, line: paragraph.line,
                "no SHA256 section; apt, too, refuses a Release without a strong hash")
        }
        files = try Self.entries(sha256, digits: 64, file: file).map(\.file)
        if let sha512 = paragraph.field("SHA512") {
            try attach(Self.entries(sha512, digits: 128, file: file), file: file)
        }
    }

    /// The file Release lists at `path`.
    func file(_ path: String) -> File? { files.first { $0.path == path } }

    /// Whether this is the Release of `suite` as a sources.list names it: its first
    /// segment (`bookworm` of `bookworm/updates`) is Release's Suite or Codename, or
    /// Release names neither (as debmirror and apt check).
    func names(suite requested: String) -> Bool {
        guard suite != nil || codename != nil else { return true }
        let name = requested.split(separator: "/").first.map(String.init) ?? requested
        return name == suite || name == codename
    }

    private static func words(_ value: String) -> [String] {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    }

    private static func date(_ field: Deb822Paragraph.Field?, file: String) throws(AptError) -> Int64? {
        guard let field else { return nil }
        guard let seconds = DebianDate.parse(field.value) else {
            throw .malformed(
                file: file, line: field.line,
                "\(field.name) '\(field.value)' is not a date such as 'Sat, 10 Jun 2023 08:57:04 UTC'")
        }
        return seconds
    }
}
