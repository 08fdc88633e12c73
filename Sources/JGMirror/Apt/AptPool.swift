/// The pool files of every index an `apt:` set reads, each path once: the same
/// .deb named by two suites, by `binary-amd64` and `binary-all`, or by a Packages
/// index and a Sources one is one item.
///
/// Two indexes that name one path with different sizes or hashes cannot both be
/// right, and an apt reader of either would fail on the other's bytes: the first
/// stays, and the pair is kept in `conflicts` for the caller to fail that file (and
/// with it the suites that name it).
struct AptPool: Sendable {
    /// Who named a file: the index (as the user knows it) and its line.
    struct Origin: Sendable, Equatable {
        var index: String
        var line: Int

        var text: String { "\(index) line \(line)" }
    }

    /// One path named twice, differently.
    struct Conflict: Sendable, Equatable {
        var first: AptPoolFile
        var firstOrigin: Origin
        var second: AptPoolFile
        var secondOrigin: Origin

        /// "pool/x.deb: 1200 bytes, SHA256 ab… by A line 3, but 1300 bytes, SHA256 cd… by B line 9".
        var message: String {
            func shown(_ file: AptPoolFile) -> String { "\(file.size) bytes, SHA256 \(file.sha256.prefix(12))…" }
            return "\(first.path): \(shown(first)) by \(firstOrigin.text), but \(shown(second)) by \(secondOrigin.text)"
        }
    }

    /// The files, in the order they were first named.
    private(set) var files: [AptPoolFile] = []
    private(set) var origins: [Origin] = []
    private(set) var conflicts: [Conflict] = []
    private var position: [String: Int] = [:]

    /// The file at `path`, when an index named it.
    func file(at path: String) -> AptPoolFile? { position[path].map { files[$0] } }

    /// Adds the files `index` names.
    mutating func add(_ named: [AptPoolFile], from index: String) {
        for file in named {
            let origin = Origin(index: index, line: file.line)
            guard let at = position[file.path] else {
                position[file.path] = files.count
                files.append(file)
                origins.append(origin)
                continue
            }
            if files[at].isSame(as: file) {
                // The same file: keep a SHA-512 one of them gives.
                if files[at].sha512 == nil { files[at].sha512 = file.sha512 }
            } else {
                conflicts.append(Conflict(first: files[at], firstOrigin: origins[at], second: file, secondOrigin: origin))
            }
        }
    }
}
