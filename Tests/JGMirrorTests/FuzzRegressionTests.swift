import Foundation
import JGMirror
import Testing

/// Inputs of the kind the libFuzzer target (Fuzz/run.sh) explores: each must give a
/// manifest or a positioned error, never a crash. Crashers it finds are added here.
@Suite struct FuzzRegressionTests {
    @Test(arguments: [
        "",
        "\u{0}",
        "version: 1\nitems: &a [*a]\n",
        "version: 1\nitems:\n  - &x {url: http://h/a}\n  - *x\n",
        "version: 1\ndefaults: &d {connections: 2}\nitems:\n  - {<<: *d, url: http://h/a}\n",
        String(repeating: "[", count: 10_000),
        "version: 1\nitems:\n" + String(repeating: "  - ", count: 500) + "url: http://h/a\n",
        "version: !!binary aGk=\nitems: []\n",
        "version: 1\nitems:\n  - url: http://h/a\n    size: 99999999999999999999999GiB\n",
        "version: 1\nitems:\n  - url: http://h/a\n    connections: -9223372036854775808\n",
        "version: 1\nitems:\n  - url: http://h/a\n    timeout: 1e308s\n",
        "version: 1\nitems:\n  - url: \"http://h/\\u0000\"\n    dest: \"a\\u0000b\"\n",
        "version: 1\nitems:\n  - url: http://h/${UNSET\n",
        "version: 1\nitems:\n  - url: http://[::1\n",
        "version: 1\nitems:\n  - url: http://h/a\n    dest: \"\"\n",
        "version: 1\nitems:\n  - url: http://h/\n    dest: ./\n",
        "version: 1\n---\nversion: 1\n",
        "\u{FEFF}version: 1\nitems: []\n",
        "version: 1\nitems:\n\t- url: http://h/a\n",
        "version: 1\nitems:\n  - url: http://h/a\n    headers: {\"\": x, \"A:B\": \"c\\r\\nInjected: 1\"}\n",
    ])
    func adversarialInputNeverCrashes(yaml: String) {
        do {
            let manifest = try Manifest.parse(yaml, name: "f.yaml")
            _ = Plan(manifest: manifest)
        } catch {
            #expect(error.location != nil, "\(error.message)")
            #expect(error.localizedDescription.hasPrefix("f.yaml:"))
        }
    }

    @Test func invalidUTF8IsAPositionedError() {
        let bytes: [UInt8] = Array("version: 1\nitems:\n  - url: http://h/".utf8) + [0xFF, 0xFE, 0x0A]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-\(UUID().uuidString).yaml").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ManifestError.self) { try Manifest.load(path: path) }
    }
}
