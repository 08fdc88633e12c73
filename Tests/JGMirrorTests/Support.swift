import Foundation
import JGMirror
import TestServer

/// Creates a fresh temporary directory for the body and removes it afterwards
/// (swift-format's `withTestDirectory`).
func withTestDirectory<T>(_ body: (String) async throws -> T) async rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-test-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
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

/// Options that keep retries quick in tests.
func testOptions() -> SyncOptions {
    var options = SyncOptions()
    options.retryBaseDelay = 0.01
    options.checkpointInterval = 0.1
    return options
}

/// Parses `yaml` as a manifest stored in `directory` and syncs it into `directory/mirror`.
func sync(_ yaml: String, in directory: String, options: SyncOptions = testOptions()) async throws -> RunReport {
    let path = write(yaml, to: "manifest.yaml", in: directory)
    let manifest = try Manifest.load(path: path)
    var planOptions = PlanOptions()
    planOptions.root = directory + "/mirror"
    return try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options).run()
}

/// A one-item manifest for `url`.
func manifest(url: String, sha256: String? = nil, extra: String = "") -> String {
    var text = "version: 1\nitems:\n  - url: \(url)\n    dest: out.bin\n"
    if let sha256 { text += "    sha256: \(sha256)\n" }
    if !extra.isEmpty { text += extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n") + "\n" }
    return text
}

/// The result of running the built `jgmirror` binary.
/// Written by one thread before a semaphore signals, read after the wait.
private final class OutputBox: @unchecked Sendable {
    var data = Data()
}

struct Execution: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Path of the built `jgmirror` executable, beside the test bundle; `JGMIRROR_TEST_BINARY`
/// runs the end-to-end tests against another build (an older one, to see a test fail).
var jgmirrorBinary: String {
    if let other = ProcessInfo.processInfo.environment["JGMIRROR_TEST_BINARY"] { return other }
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<3 {
        let candidate = folder.appendingPathComponent("jgmirror").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug/jgmirror").path
}

/// Starts the binary; the caller waits (swift-argument-parser's `AssertExecuteCommand` shape).
func launch(_ arguments: [String], environment: [String: String] = [:], in folder: String? = nil) throws -> (Process, Pipe, Pipe) {
    let process = Process()
    if let folder { process.currentDirectoryURL = URL(fileURLWithPath: folder) }
    process.executableURL = URL(fileURLWithPath: jgmirrorBinary)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    return (process, out, err)
}

/// Runs the binary to the end on a thread of its own, so that waiting for it never
/// holds one of the cooperative pool's threads (two on a 2-core machine).
func execute(_ arguments: [String], environment: [String: String] = [:], in folder: String? = nil) async throws -> Execution {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try executeBlocking(arguments, environment: environment, in: folder) })
        }
        thread.start()
    }
}

private func executeBlocking(_ arguments: [String], environment: [String: String], in folder: String?) throws -> Execution {
    let (process, out, err) = try launch(arguments, environment: environment, in: folder)
    // Both pipes drain at once, so a full one can never stall the child.
    let stderr = OutputBox()
    let errors = err.fileHandleForReading
    let done = DispatchSemaphore(value: 0)
    Thread {
        stderr.data = errors.readDataToEndOfFile()
        done.signal()
    }.start()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    done.wait()  // orders the read of `stderr.data` after its write
    process.waitUntilExit()
    return Execution(
        status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
        stderr: String(decoding: stderr.data, as: UTF8.self))
}

/// Runs the binary with the reader of its stdout gone before the first byte (a
/// `| head -1` that has had its line); returns the ended process and its stderr.
func executeWithStdoutClosed(_ arguments: [String]) async throws -> (process: Process, stderr: String) {
    let (process, out, err) = try launch(arguments)
    try out.fileHandleForReading.close()
    let stderr = await Task.detached { () -> String in
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }.value
    return (process, stderr)
}

/// Polls `condition` every 20 ms for up to `seconds`, without blocking the
/// cooperative thread pool (a 2-core machine has two threads in it).
func waitFor(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return condition()
}

/// Sends `signal` to `process` `delay` seconds after `condition` first holds, all on
/// a thread of its own: on a loaded machine a test waiting on the cooperative pool can
/// resume seconds late, after the throttled download it meant to interrupt has
/// finished. Returns whether the condition held within `seconds` (no signal if not).
func send(_ signal: Int32, to process: Process, after delay: Double = 0, within seconds: Double,
          when condition: @escaping @Sendable () -> Bool) async -> Bool {
    let pid = process.processIdentifier
    return await withCheckedContinuation { continuation in
        Thread {
            let deadline = Date().addingTimeInterval(seconds)
            var met = condition()
            while !met, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.02)
                met = condition()
            }
            if met {
                Thread.sleep(forTimeInterval: delay)
                kill(pid, signal)
            }
            continuation.resume(returning: met)
        }.start()
    }
}

/// Polls for a child process state without blocking the cooperative pool.
func waitFor(seconds: Double, process: Process) async -> Bool {
    await waitFor(seconds: seconds) { !process.isRunning }
}

func loadReport(_ path: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
}
