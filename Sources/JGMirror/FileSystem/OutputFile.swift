import Foundation
import SystemPackage

/// Writes one output of a run (the JSON or JUnit report, the metrics, the events) to
/// its `OutputTarget`. A replaced file is written beside its path under a fresh name,
/// synced, then renamed onto it: a reader, or the file after a crash, holds the old
/// file or the whole new one, never a part. A device or FIFO is written in place, and
/// stdout through its descriptor.
public enum OutputFile {
    /// Why an output could not be written: the system's words for the step that failed.
    public struct Failure: Error {
        public let reason: String

        public init(reason: String) { self.reason = reason }

        init(errno code: Int32) { self.init(Errno(rawValue: code)) }

        init(_ error: any Error) { reason = (error as? Errno)?.description ?? "\(error)" }
    }

    /// Writes the pieces `produce` hands out to `path` (resolved as an `OutputTarget`;
    /// a path no output may take is a failure), in order.
    public static func write(_ path: String, _ produce: ((String) -> Void) -> Void) throws(Failure) {
        let target: OutputTarget
        do { target = try OutputTarget.resolve(path, option: "output") } catch { throw Failure(reason: error.message) }
        let writer = try Writer(target.kind)
        defer { writer.close() }
        produce(writer.write)
        try writer.flush()
        try writer.commit()
    }

    /// One output being written. A replaced file appears at its path only on `commit()`
    /// (an events stream commits first and writes after, so it can be followed);
    /// closing an uncommitted one removes its temporary file.
    public final class Writer {
        private let kind: OutputTarget.Kind
        /// How long a stream waits for its reader.
        private let patience: OutputPatience
        /// `nil` once closed.
        private var descriptor: FileDescriptor?
        /// The fresh name a replaced file is written under until `commit()`.
        private var temporary: String?
        /// Why the first write failed; later pieces are dropped.
        private var failure: String?

        /// Opens the output: a fresh file beside a replaced one, the device or FIFO
        /// itself, or stdout. A FIFO waits for its reader, as `echo > fifo` does, and a
        /// stream for room, each for as long as `patience` allows
        /// (docs/safety.md#output-files).
        public init(_ kind: OutputTarget.Kind, patience: OutputPatience = .standard) throws(Failure) {
            self.kind = kind
            self.patience = patience
            switch kind {
            case .standardOutput:
                descriptor = .standardOutput
            case .inPlace(let path):
                let opened = try Self.openInPlace(path, patience: patience)
                var status = stat()
                let mode = fstat(opened.rawValue, &status) == 0 ? status.st_mode & S_IFMT : 0
                guard mode == S_IFCHR || mode == S_IFIFO else {
                    try? opened.close()
                    throw Failure(reason: "no longer a FIFO or character device")
                }
                descriptor = opened
            case .replaced(let path):
                // A fresh name beside `path`, created with the mode any file the user
                // writes gets (the umask applies), unlike mkstemp's private 0600.
                for _ in 0..<8 where descriptor == nil {
                    let name = path + ".\(String(UInt32.random(in: 0...UInt32.max), radix: 36)).tmp"
                    do {
                        descriptor = try FileDescriptor.open(
                            FilePath(name), .writeOnly, options: [.create, .exclusiveCreate, .closeOnExec],
                            permissions: FilePermissions(rawValue: 0o666))
                        temporary = name
                    } catch Errno.fileExists {
                        continue
                    } catch { throw Failure(error) }
                }
                guard descriptor != nil else { throw Failure(Errno.fileExists) }
            }
        }

        deinit { close() }

        /// Appends `piece`; a failure is kept for `flush()` and drops what follows.
        public func write(_ piece: String) {
            guard failure == nil, let descriptor else { return }
            var piece = piece
            if isReplacedFile {
                do { try piece.withUTF8 { _ = try descriptor.writeAll($0) } } catch {
                    failure = (error as? Errno ?? .ioError).description
                }
            } else {
                failure = piece.withUTF8 { writeStream(descriptor.rawValue, $0, patience: patience) }
            }
        }

        /// Why a write failed, once one has: the output takes no more.
        public var failureReason: String? { failure }

        /// Throws the first write's failure; syncs a replaced file to disk, so that the
        /// rename never publishes a name whose bytes a power cut could lose.
        public func flush() throws(Failure) {
            if failure == nil, isReplacedFile, let descriptor, fsync(descriptor.rawValue) != 0 {
                failure = Errno(rawValue: errno).description
            }
            if let failure { throw Failure(reason: failure) }
        }

        private var isReplacedFile: Bool {
            if case .replaced = kind { return true }
            return false
        }

        /// Renames a replaced file's temporary onto its path; nothing for the others.
        public func commit() throws(Failure) {
            guard case .replaced(let path) = kind, let temporary else { return }
            guard rename(temporary, path) == 0 else { throw Failure(errno: errno) }
            self.temporary = nil
        }

        /// Opens a device or FIFO for writing without blocking: no O_CREAT, so that one
        /// gone since the run started is a failure, never a regular file made in its
        /// place; a FIFO with no reader yet is opened again until one comes.
        private static func openInPlace(_ path: String, patience: OutputPatience) throws(Failure) -> FileDescriptor {
            let since = ContinuousClock.now
            let options: FileDescriptor.OpenOptions = [
                .closeOnExec, .nonBlocking, FileDescriptor.OpenOptions(rawValue: O_NOCTTY),
            ]
            while true {
                do { return try FileDescriptor.open(FilePath(path), .writeOnly, options: options) } catch {
                    // ENXIO: a FIFO that no process has open for reading.
                    guard (error as? Errno)?.rawValue == ENXIO, isFIFO(path) else { throw Failure(error) }
                    if let reason = patience.pauseForReader(since: since) { throw Failure(reason: reason) }
                }
            }
        }

        private static func isFIFO(_ path: String) -> Bool {
            var status = stat()
            return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO
        }

        /// Closes the output (never stdout), removing an uncommitted temporary file.
        public func close() {
            if let descriptor, descriptor != .standardOutput { try? descriptor.close() }
            descriptor = nil
            if let temporary { unlink(temporary) }
            temporary = nil
        }
    }
}

/// Writes all of `bytes` to `fd` at its position; 0, or the `errno` of the write that failed.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    var done = 0
    while done < bytes.count {
        let written = write(fd, bytes.baseAddress! + done, bytes.count - done)
        if written < 0 {
            if errno == EINTR { continue }
            return errno
        }
        done += written
    }
    return 0
}

/// Writes all of `bytes` to a stream (stdout, a FIFO, a character device) as its reader
/// takes them, never blocking past what `patience` allows: each write waits in poll(2)
/// for room and passes at most `PIPE_BUF` bytes, which a pipe with room takes at once
/// (a stdout shared with other processes cannot be made non-blocking). Nil, or why the
/// stream stopped taking bytes.
func writeStream(_ fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>, patience: OutputPatience) -> String? {
    var done = 0
    var progress = ContinuousClock.now
    while done < bytes.count {
        if let reason = patience.waitUntilWritable(fd, since: progress) { return reason }
        let written = write(fd, bytes.baseAddress! + done, min(bytes.count - done, Int(PIPE_BUF)))
        if written < 0 {
            if errno == EINTR || errno == EAGAIN { continue }
            return Errno(rawValue: errno).description
        }
        done += written
        progress = .now
    }
    return nil
}
