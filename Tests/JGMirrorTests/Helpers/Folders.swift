import Foundation
import JGMirror

/// Creates a fresh temporary directory for the body and removes it afterwards
/// (swift-format's `withTestDirectory`).
func withTestDirectory<T>(_ body: (String) async throws -> T) async rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-test-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer {
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: outputs(beside: path))
    }
    return try await body(path)
}

/// `withTestDirectory` for tests that need no `await`.
@discardableResult
func withTestDirectorySync<T>(_ body: (String) throws -> T) rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-test-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// A folder beside the test directory `dir`, made on first use and removed with it:
/// where the reports go of a manifest that mirrors into `dir` itself, as no output may
/// be written inside the root.
func outputs(beside dir: String) -> String {
    let folder = dir + ".out"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return folder
}

/// Writes `text` as `name` in `directory` and returns its path.
@discardableResult
func write(_ text: String, to name: String, in directory: String) -> String {
    let path = directory + "/" + name
    try? FileManager.default.createDirectory(atPath: Paths.parent(of: path), withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    return path
}

func sha(_ bytes: [UInt8]) -> String { Checksum.sha256(bytes) ?? "" }

func fileSHA(_ path: String) -> String? { (try? FileHasher.sha256(path: path)) }

func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

/// What the link at `path` points at, nil when `path` is not a link.
func target(_ path: String) -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: path) }
