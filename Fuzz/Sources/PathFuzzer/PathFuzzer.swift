import Foundation

// RootDirectory and RootPath are internal: Fuzz/run.sh builds with -enable-testing.
@testable import JGMirror

/// A fixed tree the fuzzer works in: `root/real/`, `root/link -> outside/`,
/// `root/leaf -> outside/secret`, and `outside/secret`, which nothing may change.
private struct Fixture {
    let root: String
    let outside: String
    let realRoot: String
    let walkers: [RootDirectory]

    /// Where the tree of this process lives; removed when it exits.
    static var base: String { FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-pathfuzz-\(getpid())").path }

    init() {
        let base = Self.base
        atexit { try? FileManager.default.removeItem(atPath: Fixture.base) }
        root = base + "/root"
        outside = base + "/outside"
        let manager = FileManager.default
        try? manager.removeItem(atPath: base)
        try! manager.createDirectory(atPath: root + "/real", withIntermediateDirectories: true)
        try! manager.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try! Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/secret"))
        try! manager.createSymbolicLink(atPath: root + "/link", withDestinationPath: outside)
        try! manager.createSymbolicLink(atPath: root + "/leaf", withDestinationPath: outside + "/secret")
        realRoot = RootConfinement.canonical(root)!
        walkers = [
            try! RootDirectory(path: root, resolution: .openat2), try! RootDirectory(path: root, resolution: .componentWalk),
        ]
    }

    /// Traps unless `outside` still holds exactly the untouched secret.
    func checkOutside() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: outside)) ?? []
        precondition(names == ["secret"], "a write left the root: \(outside) holds \(names)")
        let text = try? String(contentsOfFile: outside + "/secret", encoding: .utf8)
        precondition(text == "secret", "the file behind a symlink was changed")
    }

    /// Traps unless the open descriptor `fd` names something below the root.
    func checkInside(_ fd: Int32) {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
        precondition(target.hasPrefix(realRoot + "/") || target == realRoot, "opened \(target), outside \(realRoot)")
    }

    /// Removes what an input created, keeping the fixture.
    func reset() {
        let manager = FileManager.default
        for name in (try? manager.contentsOfDirectory(atPath: root)) ?? [] where !["real", "link", "leaf"].contains(name) {
            try? manager.removeItem(atPath: root + "/" + name)
        }
        for name in (try? manager.contentsOfDirectory(atPath: root + "/real")) ?? [] {
            try? manager.removeItem(atPath: root + "/real/" + name)
        }
    }
}

nonisolated(unsafe) private let fixture = Fixture()

/// libFuzzer entry point: the first byte picks an operation, the rest is a path
/// below the root. Whatever the path, nothing outside the root may be created,
/// changed or opened, and `RootPath` must never return a name that climbs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPath(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let operation = bytes[0]
    let relative = String(decoding: bytes.dropFirst(), as: UTF8.self)
    if case .success(let names) = RootPath.components(relative) {
        precondition(names.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains("/") && !$0.contains("\0") })
    }
    let path = operation & 0x80 == 0 ? fixture.root + "/" + relative : relative
    for root in fixture.walkers {
        switch operation % 6 {
        case 0:
            if let fd = try? root.openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC) {
                fixture.checkInside(fd)
                _ = write(fd, "x", 1)
                close(fd)
            }
        case 1:
            try? root.makeFolders(path)
            if let fd = try? root.openFolder(path) {
                fixture.checkInside(fd)
                close(fd)
            }
        case 2:
            if let fd = try? root.openFile(path, flags: O_RDONLY | O_NONBLOCK) {
                fixture.checkInside(fd)
                close(fd)
            }
        case 3:
            let scratch = fixture.root + "/real/scratch"
            FileManager.default.createFile(atPath: scratch, contents: Data("y".utf8))
            try? root.rename(scratch, to: path)
            try? root.rename(path, to: fixture.root + "/real/back")
        case 4:
            _ = root.status(path)
            _ = try? root.fileStatus(path)
            root.syncFolder(path)
        default:
            if let fd = try? root.openFile(path, flags: O_RDWR | O_CREAT | O_EXCL) { close(fd) }
            root.unlink(path)
        }
        fixture.checkOutside()
    }
    fixture.reset()
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

@_cdecl("PathFuzzer_main")
public func fuzzerMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { fuzzPath($0, $1) }
}
