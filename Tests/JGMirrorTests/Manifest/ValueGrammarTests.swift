import Foundation
import JGMirror
import Testing

/// Numbers, sizes and durations are read one way by the manifest and the command line
/// alike (docs/manifest.md#values): decimal digits, a fraction where a size or a
/// duration takes one, a minus sign only where a value may be negative; no hex, no
/// `+`, no `-0`, no exponent; a tag only where it agrees with the key; UTF-8 only.
/// Through the built binary.
@Suite struct ValueGrammarTests {
    /// A manifest of one item with `itemLine` among its keys and `defaultsLine` under
    /// `defaults:`; `plan` fetches nothing.
    func plan(item itemLine: String? = nil, defaults defaultsLine: String? = nil, in dir: String) async throws -> Execution {
        var yaml = "version: 1\nroot: mirror\n"
        if let defaultsLine { yaml += "defaults:\n  \(defaultsLine)\n" }
        yaml += "items:\n  - url: http://127.0.0.1:9/a\n    dest: a.bin\n"
        if let itemLine { yaml += "    \(itemLine)\n" }
        let path = write(yaml, to: "m.yaml", in: dir)
        return try await execute(["plan", path], in: dir)
    }

    @Test(arguments: [
        ("timeout: 0x10s", "m.yaml:6:14: 'timeout' must be a duration"),
        ("timeout: .5s", "m.yaml:6:14: 'timeout' must be a duration"),
        ("timeout: 1e1s", "m.yaml:6:14: 'timeout' must be a duration"),
        ("connections: +3", "m.yaml:6:18: 'connections' must be a whole number from 1 to 64, not '+3'"),
        ("retries: -0", "m.yaml:6:14: 'retries' must be a whole number from 0 to 100, not '-0'"),
        ("tag: -0", "m.yaml:6:10: 'tag' must be a whole number from"),
        ("min_segment: 1e3KiB", "m.yaml:6:18: 'min_segment' must be a size"),
        ("max_size: 0x10MiB", "m.yaml:6:15: 'max_size' must be a size"),
        ("connections: !!str 3", "m.yaml:6:18: 'connections' expects a whole number, not a value tagged !!str"),
        ("insecure: !!str true", "m.yaml:6:15: 'insecure' expects true or false, not a value tagged !!str"),
        ("mirrors: !custom x", "m.yaml:6:14: the YAML tag '!custom' is not taken here"),
    ])
    func anItemValueOutsideTheGrammarIsALocatedError(line: String, message: String) async throws {
        try await withTestDirectory { dir in
            let run = try await plan(item: line, in: dir)
            #expect(run.status == 2, "\(line): \(run.stderr)")
            #expect(run.stderr.hasPrefix("jgmirror: \(dir)/\(message)"), "\(line): \(run.stderr)")
        }
    }

    @Test(arguments: [
        ("max_wait: -0s", "m.yaml:4:13: 'max_wait' must be a duration"),
        ("host_grace: 0x1e", "m.yaml:4:15: 'host_grace' must be a duration"),
        ("min_rate: 0x4KiB", "m.yaml:4:13: 'min_rate' must be a rate"),
    ])
    func aHostValueOutsideTheGrammarIsALocatedError(line: String, message: String) async throws {
        try await withTestDirectory { dir in
            let run = try await plan(defaults: line, in: dir)
            #expect(run.status == 2, "\(line): \(run.stderr)")
            #expect(run.stderr.hasPrefix("jgmirror: \(dir)/\(message)"), "\(line): \(run.stderr)")
        }
    }

    @Test func theDocumentedFormsStillParse() async throws {
        try await withTestDirectory { dir in
            for line in [
                "timeout: 1.5s", "timeout: 250ms", "timeout: 2m", "timeout: 30", "min_segment: 1.5MiB", "max_size: 8GiB",
                "max_size: 4096", "connections: !!int 3", "connections: \"3\"", "tag: -5", "retries: 0", "timeout: !!float 1.5",
                "insecure: !!bool false", "mirrors: !!str http://127.0.0.1:9/b",
            ] {
                let run = try await plan(item: line, in: dir)
                #expect(run.status == 0, "\(line): \(run.stderr)")
            }
            for line in ["max_wait: 0s", "host_grace: 1.5m", "min_rate: 64KiB/s", "connect_timeout: 500ms"] {
                let run = try await plan(defaults: line, in: dir)
                #expect(run.status == 0, "\(line): \(run.stderr)")
            }
        }
    }

    @Test func aManifestInUTF16IsRefusedAndOneWithAUTF8ByteOrderMarkRead() async throws {
        try await withTestDirectory { dir in
            let yaml = "version: 1\nroot: mirror\nitems:\n  - url: http://127.0.0.1:9/a\n"
            for (encoding, name) in [(String.Encoding.utf16LittleEndian, "UTF-16LE"), (.utf16BigEndian, "UTF-16BE")] {
                let mark: [UInt8] = name.hasSuffix("LE") ? [0xFF, 0xFE] : [0xFE, 0xFF]
                let path = dir + "/\(name).yaml"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(mark) + yaml.data(using: encoding)!))
                let run = try await execute(["plan", path])
                #expect(run.status == 2, "\(name): \(run.stderr)")
                #expect(
                    run.stderr
                        == "jgmirror: \(path):1:1: the manifest must be UTF-8, but it starts with the byte order mark of \(name); save it as UTF-8\n",
                    "\(run.stderr)")
            }
            let utf8 = dir + "/bom.yaml"
            #expect(FileManager.default.createFile(atPath: utf8, contents: Data([0xEF, 0xBB, 0xBF]) + Data(yaml.utf8)))
            let read = try await execute(["plan", utf8])
            #expect(read.status == 0, "\(read.stderr)")
            let nul = write("version: 1\nitems:\0\n", to: "nul.yaml", in: dir)
            let refused = try await execute(["plan", nul])
            #expect(
                refused.status == 2 && refused.stderr.contains("nul.yaml:2:7: the manifest must be UTF-8"), "\(refused.stderr)")
        }
    }

    @Test(arguments: [
        (["--jobs", "+3"], "--jobs"), (["--retries=-0"], "--retries"), (["--keep", "+3"], "--keep"),
        (["--max-rate", "0x10M"], "--max-rate"), (["--min-free", "1e3M"], "--min-free"), (["--retry-delay=-0s"], "--retry-delay"),
        (["--max-duration", "0x10s"], "--max-duration"), (["--max-delete", "+5"], "--max-delete"),
        (["--shard", "0/+2"], "--shard"),
    ])
    func anOptionOutsideTheGrammarIsAUsageError(arguments: [String], option: String) async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nroot: mirror\nitems:\n  - url: http://127.0.0.1:9/a\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none"] + arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(option), "\(arguments): \(run.stderr)")
            #expect(!exists(dir + "/mirror"), "\(arguments)")
        }
    }

    @Test func getTakesTheSameNumbers() async throws {
        try await withTestDirectory { dir in
            for arguments in [["-c", "+2"], ["--tag=-0"], ["--timeout", "0x10s"], ["--min-segment", "1e3KiB"]] {
                let run = try await execute(["get", "http://127.0.0.1:9/a", "-o", dir + "/a.bin"] + arguments)
                #expect(run.status == 2, "\(arguments): \(run.stderr)")
            }
        }
    }
}
