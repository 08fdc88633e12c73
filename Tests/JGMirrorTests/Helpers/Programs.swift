import Foundation
import Subprocess
import Synchronization
import SystemPackage

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
