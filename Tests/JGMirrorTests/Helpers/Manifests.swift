import JGMirror
import Testing

/// A one-item manifest for `url`, mirrored into `root` when given.
func manifest(url: String, sha256: String? = nil, extra: String = "", root: String? = nil) -> String {
    var text = "version: 1\n" + (root.map { "root: \($0)\n" } ?? "") + "items:\n  - url: \(url)\n    dest: out.bin\n"
    if let sha256 { text += "    sha256: \(sha256)\n" }
    if !extra.isEmpty { text += extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n") + "\n" }
    return text
}

/// Each manifest of `version: 1`, `key:` with a case's lines under it and one item
/// fails with the case's message.
func expectManifestErrors(_ cases: [(lines: String, message: String)], under key: String) {
    for (lines, expected) in cases {
        do {
            _ = try Manifest.parse("version: 1\n\(key):\n" + lines + "items:\n  - url: http://h/a\n", name: "m.yaml")
            Issue.record("no error for \(lines)")
        } catch {
            #expect(error.localizedDescription == expected)
        }
    }
}
