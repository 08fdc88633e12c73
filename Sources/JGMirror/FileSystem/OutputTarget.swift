import Foundation

/// Where one output of a run (`--report`, `--junit`, `--metrics`, `--events`, `-o`)
/// goes, decided before the run starts (docs/safety.md#output-files).
///
/// Only a regular file or a missing name is replaced (written beside it, then renamed
/// over it): renaming over `/dev/null` as root turns it into a regular file, and over
/// `/dev/stdout` replaces the link. A character device or FIFO is written in place;
/// anything else is refused, as is one file named by two outputs.
public struct OutputTarget: Sendable, Equatable {
    /// How the output is written.
    public enum Kind: Sendable, Equatable {
        /// `-`, or a path that names this process's stdout (`/dev/stdout`, or the file
        /// or pipe stdout is): written through descriptor 1, where a shell's `>>` and
        /// other writers of stdout keep their place.
        case standardOutput
        /// A character device or FIFO: opened for writing, never truncated, created or
        /// renamed over. `path` is the name as given, which the kernel resolves on open
        /// (`/proc/self/fd/1` has no other name for a pipe).
        case inPlace(path: String)
        /// A regular file or a missing name: written beside `path` and renamed over it.
        /// Through a symlink, `path` is the file the link leads to, so the link stays.
        case replaced(path: String)
    }

    /// The option that named it (`--report`), for messages.
    public let option: String
    /// The path as given.
    public let given: String
    public let kind: Kind
    /// What two outputs must not share: the device and inode of an existing file, or
    /// the resolved path of a missing one.
    let identity: Identity

    enum Identity: Hashable, Sendable {
        case file(dev: UInt64, ino: UInt64)
        case name(String)
    }

    /// A path no output may take, said in one line naming the option and the path.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Decides how `given` is written for `option`; refuses a folder, a socket, a block
    /// device and a symbolic link that loops or leads nowhere a file could be made.
    public static func resolve(_ given: String, option: String) throws(Refusal) -> OutputTarget {
        func refuse(_ why: String) -> Refusal {
            Refusal(
                message: "\(option) \(Rules.printable(given)): \(why); give a regular file, a FIFO, a character device or '-'")
        }
        let stdout = fileStatus(descriptor: STDOUT_FILENO)
        if given == "-" {
            return OutputTarget(option: option, given: given, kind: .standardOutput, identity: stdout.map(identity) ?? .name("-"))
        }
        guard !given.isEmpty else { throw refuse("an empty path") }
        var link = stat()
        guard lstat(given, &link) == 0 else {
            // A missing name is made at the end; any other reason it cannot be looked
            // at (a missing folder, no permission) is the write's failure to report,
            // and the run's other outputs are written all the same.
            return OutputTarget(option: option, given: given, kind: .replaced(path: given), identity: .name(absolute(given)))
        }
        var status = link
        var path = given
        if link.st_mode & S_IFMT == S_IFLNK {
            if stat(given, &status) != 0 {
                if errno == ELOOP { throw refuse("a symbolic link that loops") }
                // A link to a name not made yet: made through the link when the folder
                // it leads to exists.
                guard let target = danglingTarget(given) else { throw refuse("a symbolic link that leads nowhere") }
                return OutputTarget(option: option, given: given, kind: .replaced(path: target), identity: .name(target))
            }
            path = resolvedPath(given) ?? given
        }
        let fileIdentity = identity(status)
        if let stdout, identity(stdout) == fileIdentity {
            return OutputTarget(option: option, given: given, kind: .standardOutput, identity: fileIdentity)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return OutputTarget(option: option, given: given, kind: .replaced(path: path), identity: fileIdentity)
        case S_IFCHR, S_IFIFO:
            return OutputTarget(option: option, given: given, kind: .inPlace(path: given), identity: fileIdentity)
        case S_IFDIR: throw refuse("a folder")
        case S_IFSOCK: throw refuse("a socket")
        case S_IFBLK: throw refuse("a block device")
        default: throw refuse("not a regular file")
        }
    }

    /// Refuses two outputs that lead to one file, stream or name: the last writer would
    /// win, or their lines would interleave.
    public static func refuseShared(_ targets: [OutputTarget]) throws(Refusal) {
        var seen: [Identity: OutputTarget] = [:]
        for target in targets {
            if let earlier = seen[target.identity] {
                let shared =
                    target.kind == .standardOutput
                    ? "cannot share stdout with \(earlier.option)"
                    : "the same file as \(earlier.option) \(Rules.printable(earlier.given))"
                throw Refusal(
                    message: "\(target.option) \(Rules.printable(target.given)): \(shared); give each output a path of its own")
            }
            seen[target.identity] = target
        }
    }

    private static func identity(_ status: stat) -> Identity {
        .file(dev: UInt64(status.st_dev), ino: UInt64(status.st_ino))
    }

    private static func fileStatus(descriptor: Int32) -> stat? {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? status : nil
    }

    /// `path` with every link and `..` resolved, when it exists.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `path` made absolute with its folder resolved: how two spellings of one missing
    /// name (`r.json`, `./r.json`) are told to be the same.
    private static func absolute(_ path: String) -> String {
        let folder = Paths.parent(of: path)
        let name = Paths.lastComponent(of: path)
        if let resolved = resolvedPath(folder.isEmpty ? "." : folder) { return (resolved == "/" ? "" : resolved) + "/" + name }
        return path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// Where a link to a missing name leads, when the folder it names exists: the file
    /// is made there and the link kept. Follows a chain of at most 40 links, as the
    /// kernel does.
    private static func danglingTarget(_ link: String) -> String? {
        var current = link
        for _ in 0..<40 {
            guard let target = Symlink.target(current), !target.isEmpty else { return nil }
            let folder = Paths.parent(of: current)
            let next = target.hasPrefix("/") ? target : (folder.isEmpty ? "." : folder) + "/" + target
            var status = stat()
            if lstat(next, &status) == 0 {
                guard status.st_mode & S_IFMT == S_IFLNK else { return nil }
                current = next
                continue
            }
            guard errno == ENOENT else { return nil }
            var folderStatus = stat()
            let nextFolder = Paths.parent(of: next)
            guard stat(nextFolder.isEmpty ? "." : nextFolder, &folderStatus) == 0, folderStatus.st_mode & S_IFMT == S_IFDIR else {
                return nil
            }
            return absolute(next)
        }
        return nil
    }
}
