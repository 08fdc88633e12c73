/// The checksum sections of a Release (`SHA256:`, `SHA512:`): one ` HASH SIZE PATH`
/// a line.
extension AptRelease {
    /// The files of one section, each with its line; `digits` is its hash's length in hex.
    static func entries(_ field: Deb822Paragraph.Field, digits: Int, file: String) throws(AptError)
        -> [(file: File, line: Int)]
    {
        if !field.value.isEmpty {
            throw .malformed(file: file, line: field.line, "\(field.name): expects its entries on the lines below it")
        }
        var files: [(file: File, line: Int)] = []
        var seen = Set<String>()
        for line in field.continuation {
            let parts = line.text.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 3 else {
                throw .malformed(file: file, line: line.number, "expected 'HASH SIZE PATH' in \(field.name)")
            }
            guard parts[0].utf8.count == digits, parts[0].utf8.allSatisfy(AptPoolFile.isHexDigit) else {
                throw .malformed(file: file, line: line.number, "\(field.name) hash is not \(digits) hex digits")
            }
            guard let size = AptRelease.size(parts[1]) else {
                throw .malformed(file: file, line: line.number, "'\(parts[1].prefix(40))' is not a size in bytes")
            }
            let path = String(parts[2])
            if let problem = AptPath.problem(path) {
                throw .unsafePath(file: file, line: line.number, path: path, problem)
            }
            guard seen.insert(path).inserted else {
                throw .malformed(file: file, line: line.number, "'\(path)' is listed twice in \(field.name)")
            }
            files.append((File(path: path, size: size, sha256: parts[0].lowercased()), line.number))
        }
        return files
    }

    /// A decimal size, without sign, that fits 63 bits.
    static func size(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// Adds the `SHA512:` section's hashes (read by `entries` into `sha256`) to the
    /// files the `SHA256:` section lists; a file only SHA512 lists is left out, as
    /// every check here is made with SHA-256.
    mutating func attach(_ sha512: [(file: File, line: Int)], file: String) throws(AptError) {
        var position: [String: Int] = [:]
        for (index, entry) in files.enumerated() { position[entry.path] = index }
        for (entry, line) in sha512 {
            guard let index = position[entry.path] else { continue }
            guard files[index].size == entry.size else {
                throw .malformed(
                    file: file, line: line,
                    "'\(entry.path)' has size \(files[index].size) in SHA256 and \(entry.size) in SHA512")
            }
            files[index].sha512 = entry.sha256
        }
    }
}
