/// The index files of one suite an `apt:` set mirrors, and which of them it reads:
/// what `AptSelection.plan` makes of a Release.
struct AptIndexPlan: Sendable, Equatable {
    /// What an index file is for; it decides nothing but the order of publishing and
    /// which files are read.
    enum Kind: Sendable, Equatable {
        /// `binary-ARCH/Packages*`: names the .deb files.
        case packages
        /// `source/Sources*`: names the source packages' files.
        case sources
        /// `i18n/Translation-*`, `i18n/Index`: package descriptions.
        case translation
        /// `Contents-*`: which package holds which file (apt-file).
        case contents
        /// `dep11/*`: AppStream metadata and icons.
        case appStream
        /// `cnf/Commands-*`: command-not-found's lists.
        case commands
        /// `binary-ARCH/Release`, `source/Release`: the per-component Release files.
        case componentRelease
    }

    /// One file to mirror, with its by-hash copy's path when Release says
    /// `Acquire-By-Hash: yes` (apt then asks only for that copy).
    struct IndexFile: Sendable, Equatable {
        var file: AptRelease.File
        var kind: Kind
        /// Relative to the suite's folder, like `file.path`.
        var byHash: String?
    }

    /// The forms of one index (`main/binary-amd64/Packages` in `.xz`, `.gz`, plain),
    /// in the order to try them: the first the server has is read. Debian lists a
    /// plain `Packages` it does not serve, so a form that is missing is no failure
    /// while another is there.
    struct Readable: Sendable, Equatable {
        /// The path without a compression suffix.
        var base: String
        /// xz, then gzip, then plain, as Release lists them.
        var forms: [(format: CompressionFormat, file: AptRelease.File)]

        /// The plain form, when Release lists it: its size and hash check what a
        /// compressed form decompresses to, even when the server does not serve it.
        var plain: AptRelease.File? { forms.first { $0.format == .plain }?.file }

        static func == (lhs: Readable, rhs: Readable) -> Bool {
            lhs.base == rhs.base && lhs.forms.elementsEqual(rhs.forms) { $0.format == $1.format && $0.file == $1.file }
        }
    }

    /// Every file to mirror, in the order of Release.
    var files: [IndexFile] = []
    /// The Packages indexes to read, one form each.
    var packages: [Readable] = []
    /// The Sources indexes to read (`sources: true`).
    var sources: [Readable] = []
}
