/// A file of a repository's pool that an index names: a .deb of a Packages stanza,
/// or a .dsc, .orig.tar or .debian.tar of a Sources stanza.
struct AptPoolFile: Sendable, Equatable {
    /// Relative to the repository's base: `pool/main/h/hello/hello_2.10-3_amd64.deb`.
    var path: String
    var size: Int64
    /// Lower-case hex.
    var sha256: String
    /// Lower-case hex, when the stanza gives it.
    var sha512: String?
    /// The line of the index that names it, for errors.
    var line: Int

    /// Whether `other` is the same file: same path, size and hashes (the line aside).
    func isSame(as other: AptPoolFile) -> Bool {
        path == other.path && size == other.size && sha256 == other.sha256
            && (sha512 == nil || other.sha512 == nil || sha512 == other.sha512)
    }

    /// The fields of a Packages stanza read.
    static let packageFields: Set<String> = ["Filename", "Size", "SHA256", "SHA512"]
    /// The fields of a Sources stanza read.
    static let sourceFields: Set<String> = ["Directory", "Checksums-Sha256"]

    /// Every file the Packages index in `bytes` names; `file` names the index in errors.
    static func packages(_ bytes: [UInt8], file: String) throws(AptError) -> [AptPoolFile] {
        var reader = Deb822Reader(bytes, wanted: packageFields)
        var files: [AptPoolFile] = []
        while true {
            let next: Deb822Paragraph?
            do { next = try reader.next() } catch { throw AptError(error, file: file) }
            guard let stanza = next else { return files }
            func missing(_ name: String) -> AptError {
                .malformed(file: file, line: stanza.line, "the stanza has no \(name) field")
            }
            guard let filename = stanza.field("Filename") else { throw missing("Filename") }
            guard let sizeField = stanza.field("Size") else { throw missing("Size") }
            guard let sha256 = stanza.field("SHA256") else {
                throw .malformed(file: file, line: stanza.line, "the stanza has no SHA256 field; apt refuses such a package too")
            }
            try checkPoolPath(filename.value, file: file, line: filename.line)
            guard let size = AptRelease.size(Substring(sizeField.value)) else {
                throw .malformed(file: file, line: sizeField.line, "Size '\(sizeField.value.prefix(40))' is not a size in bytes")
            }
            let sha512 = stanza.field("SHA512")
            files.append(
                AptPoolFile(
                    path: filename.value, size: size, sha256: try hex(sha256, digits: 64, file: file),
                    sha512: try sha512.map { (field) throws(AptError) in try hex(field, digits: 128, file: file) },
                    line: filename.line))
        }
    }

    /// The lower-case hex of a hash field.
    static func hex(_ field: Deb822Paragraph.Field, digits: Int, file: String) throws(AptError) -> String {
        guard field.value.utf8.count == digits, field.value.utf8.allSatisfy(AptPoolFile.isHexDigit) else {
            throw .malformed(file: file, line: field.line, "\(field.name) is not \(digits) hex digits")
        }
        return field.value.lowercased()
    }

    /// 0-9, a-f, A-F, on bytes (iterating `Character`s breaks graphemes: slow, and not needed).
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// A pool file's path must pass `AptPath` and stay out of `dists/`, where the
    /// indexes are placed in an order of their own.
    static func checkPoolPath(_ path: String, file: String, line: Int) throws(AptError) {
        if let problem = AptPath.problem(path) { throw .unsafePath(file: file, line: line, path: path, problem) }
        if path.hasPrefix("dists/") {
            throw .unsafePath(file: file, line: line, path: path, "lies in dists/, where only the suites' indexes go")
        }
    }
}
