/// The files of a Sources index's stanzas: `Directory` + each name of
/// `Checksums-Sha256` (` HASH SIZE NAME` a line).
extension AptPoolFile {
    /// Every file the Sources index in `bytes` names; `file` names the index in errors.
    static func sources(_ bytes: [UInt8], file: String) throws(AptError) -> [AptPoolFile] {
        var reader = Deb822Reader(bytes, wanted: sourceFields)
        var files: [AptPoolFile] = []
        while true {
            let next: Deb822Paragraph?
            do { next = try reader.next() } catch { throw AptError(error, file: file) }
            guard let stanza = next else { return files }
            guard let directory = stanza.field("Directory") else {
                throw .malformed(file: file, line: stanza.line, "the stanza has no Directory field")
            }
            guard let checksums = stanza.field("Checksums-Sha256"), !checksums.continuation.isEmpty else {
                throw .malformed(file: file, line: stanza.line, "the stanza has no Checksums-Sha256 files")
            }
            try checkPoolPath(directory.value, file: file, line: directory.line)
            for line in checksums.continuation {
                files.append(try sourceFile(line, directory: directory.value, file: file))
            }
        }
    }

    /// One ` HASH SIZE NAME` line of `Checksums-Sha256`: NAME is a file name in `directory`.
    private static func sourceFile(_ line: Deb822Paragraph.Line, directory: String, file: String) throws(AptError)
        -> AptPoolFile
    {
        let parts = line.text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 3 else {
            throw .malformed(file: file, line: line.number, "expected 'HASH SIZE NAME' in Checksums-Sha256")
        }
        guard parts[0].utf8.count == 64, parts[0].utf8.allSatisfy(AptPoolFile.isHexDigit) else {
            throw .malformed(file: file, line: line.number, "Checksums-Sha256 hash is not 64 hex digits")
        }
        guard let size = AptRelease.size(parts[1]) else {
            throw .malformed(file: file, line: line.number, "'\(parts[1].prefix(40))' is not a size in bytes")
        }
        let name = String(parts[2])
        guard AptPath.isFileName(name) else {
            throw .unsafePath(
                file: file, line: line.number, path: name, "is not one file name in the stanza's Directory")
        }
        let path = directory + "/" + name
        try checkPoolPath(path, file: file, line: line.number)
        return AptPoolFile(path: path, size: size, sha256: parts[0].lowercased(), line: line.number)
    }
}
