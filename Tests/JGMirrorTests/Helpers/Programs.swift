import Foundation
import JGMirror
import Subprocess
import Synchronization
import SystemPackage
import TestServer

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

/// Writes `yaml` to `dir/m.yaml`, loads it and syncs it into `dir/mirror`: the run reads
/// its sets' lists, as a library user's one call does.
func syncSets(_ yaml: String, in dir: String, options: SyncOptions = testOptions()) async throws -> RunReport {
    let manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
    var planOptions = PlanOptions()
    planOptions.root = dir + "/mirror"
    return try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options).run()
}

/// A one-item manifest for `url`, mirrored into `root` when given.
func manifest(url: String, sha256: String? = nil, extra: String = "", root: String? = nil) -> String {
    var text = "version: 1\n" + (root.map { "root: \($0)\n" } ?? "") + "items:\n  - url: \(url)\n    dest: out.bin\n"
    if let sha256 { text += "    sha256: \(sha256)\n" }
    if !extra.isEmpty { text += extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n") + "\n" }
    return text
}

/// The result of running the built `jgmirror` binary.
struct Execution: Sendable {
    /// The exit code, or the signal that ended the process.
    var status: Int32
    /// Whether a signal ended the process (`status` is then its number).
    var signalled = false
    var stdout: String
    var stderr: String
}

/// Path of the built `jgmirror` executable, beside the test bundle; `JGMIRROR_TEST_BINARY`
/// runs the end-to-end tests against another build (an older one, to see a test fail).
var jgmirrorBinary: String {
    if let other = ProcessInfo.processInfo.environment["JGMIRROR_TEST_BINARY"] { return other }
    return builtProgram("jgmirror")
}

/// Path of a program the package builds (`jgmirror`, an example), beside the test bundle.
func builtProgram(_ name: String) -> String {
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<3 {
        let candidate = folder.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug/" + name).path
}

/// Starts the binary; the caller waits (swift-argument-parser's `AssertExecuteCommand` shape).
func launch(_ arguments: [String], environment: [String: String] = [:], in folder: String? = nil) throws -> (Process, Pipe, Pipe)
{
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

/// Runs the binary to the end.
func execute(_ arguments: [String], environment: [String: String] = [:], in folder: String? = nil) async throws -> Execution {
    try await runProgram(jgmirrorBinary, arguments, environment: environment, in: folder)
}

/// Runs `program` (a path, or a name looked up in `PATH`) to the end, both of its
/// outputs read as they come. swift-subprocess waits for it without holding one of the
/// cooperative pool's threads (two on a 2-core machine).
func runProgram(_ program: String, _ arguments: [String], environment: [String: String] = [:], in folder: String? = nil)
    async throws -> Execution
{
    let result = try await Subprocess.run(
        executable(program), arguments: Arguments(arguments), environment: inheriting(environment),
        workingDirectory: folder.map { FilePath($0) }, output: .string(limit: .max), error: .string(limit: .max))
    return Execution(result.terminationStatus, stdout: result.standardOutput, stderr: result.standardError)
}

/// Runs the binary with the reader of its stdout gone before the first byte (a
/// `| head -1` that has had its line).
func executeWithStdoutClosed(_ arguments: [String]) async throws -> Execution {
    let pipe = try FileDescriptor.pipe(options: .closeOnExec)
    try pipe.readEnd.close()
    let result = try await Subprocess.run(
        executable(jgmirrorBinary), arguments: Arguments(arguments),
        output: .fileDescriptor(pipe.writeEnd, closeAfterSpawningProcess: true), error: .string(limit: .max))
    return Execution(result.terminationStatus, stdout: "", stderr: result.standardError)
}

private func executable(_ program: String) -> Executable {
    program.contains("/") ? .path(FilePath(program)) : .name(program)
}

/// This process's environment with `changes` applied.
private func inheriting(_ changes: [String: String]) -> Environment {
    var keyed: [Environment.Key: String?] = [:]
    for (name, value) in changes { keyed[Environment.Key(rawValue: name)!] = value }
    return .inherit.updating(keyed)
}

extension Execution {
    init(_ termination: TerminationStatus, stdout: String, stderr: String) {
        switch termination {
        case .exited(let code): self.init(status: code, stdout: stdout, stderr: stderr)
        case .signaled(let signal): self.init(status: signal, signalled: true, stdout: stdout, stderr: stderr)
        }
    }
}

/// Whether `condition` comes to hold within `seconds`, looked at every 20 ms: for what
/// no event announces, such as a file a child process writes. The suite's one wait
/// driven by a clock; its limits are generous, so that a loaded machine makes a test
/// slower, not red. Blocks the calling thread.
private func poll(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return true
}

/// `poll` on a thread of its own, leaving the cooperative thread pool free (a 2-core
/// machine has two threads in it).
func waitFor(seconds: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    await withCheckedContinuation { done in
        Thread { done.resume(returning: poll(seconds: seconds, condition)) }.start()
    }
}

/// Sends `signal` to `process` as soon as `condition` holds, from a thread of its own:
/// on a loaded machine a test waiting on the cooperative pool can resume seconds late,
/// after the throttled download it meant to interrupt has finished. Returns whether
/// the condition held within `seconds` (no signal if not).
func send(
    _ signal: Int32, to process: Process, within seconds: Double,
    when condition: @escaping @Sendable () -> Bool
) async -> Bool {
    let pid = process.processIdentifier
    return await withCheckedContinuation { done in
        Thread {
            let met = poll(seconds: seconds, condition)
            if met { kill(pid, signal) }
            done.resume(returning: met)
        }.start()
    }
}

/// Whether `process` ends within `seconds`: woken by its end, not by a clock.
func waitFor(seconds: Double, process: Process) async -> Bool {
    await withCheckedContinuation { done in
        Thread {
            let ended = DispatchSemaphore(value: 0)
            Thread {
                process.waitUntilExit()
                ended.signal()
            }.start()
            done.resume(returning: ended.wait(timeout: .now() + seconds) == .success)
        }.start()
    }
}

/// Whether the resume state at `path` records bytes received: an interrupt after it
/// leaves something to resume.
func resumeStateHoldsBytes(_ path: String) -> Bool {
    guard let state = try? loadReport(path), let length = state["length"] as? Int,
        let missing = state["missing"] as? [[Int]]
    else { return false }
    return missing.reduce(0) { $0 + ($1.count == 2 ? $1[1] - $1[0] : 0) } < length
}

func loadReport(_ path: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
}

/// Runs the binary to its end, or kills it after `seconds`: nil then. For what once
/// ran for ever, so that a regression fails the test instead of hanging the suite.
func execute(_ arguments: [String], endingWithin seconds: Double) async throws -> Execution? {
    let (process, out, err) = try launch(arguments)
    // Both pipes are read on threads of their own as the process writes, so that it
    // never blocks on a full pipe; not on the cooperative pool, which has as few
    // threads as the machine has cores.
    let stdout = PipeReader(out)
    let stderr = PipeReader(err)
    guard await waitFor(seconds: seconds, process: process) else {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return nil
    }
    return Execution(
        status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
        stdout: await stdout.text(), stderr: await stderr.text())
}

/// Reads a pipe to its end on a thread of its own.
final class PipeReader: Sendable {
    private let data = Mutex<Data?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ pipe: Pipe) {
        Thread { [self] in
            let bytes = pipe.fileHandleForReading.readDataToEndOfFile()
            data.withLock { $0 = bytes }
            done.signal()
        }.start()
    }

    /// What the pipe carried, once its writer closed it.
    func text() async -> String {
        await withCheckedContinuation { finished in
            Thread { [self] in
                done.wait()
                finished.resume(returning: String(decoding: data.withLock { $0 } ?? Data(), as: UTF8.self))
            }.start()
        }
    }
}
