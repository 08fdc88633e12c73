import Foundation

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

        init(errno code: Int32) { reason = String(cString: strerror(code)) }
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
        private var descriptor: Int32
        /// The fresh name a replaced file is written under until `commit()`.
        private var temporary: String?
        /// The `errno` of the first write that failed; later pieces are dropped.
        private var failure: Int32 = 0

        /// Opens the output: a fresh file beside a replaced one, the device or FIFO
        /// itself (a FIFO waits for its reader, as `echo > fifo` does), or stdout.
        public init(_ kind: OutputTarget.Kind) throws(Failure) {
            self.kind = kind
            switch kind {
            case .standardOutput:
                descriptor = STDOUT_FILENO
            case .inPlace(let path):
                // No O_CREAT: a device or FIFO gone since the run started is a failure,
                // never a regular file made in its place.
                descriptor = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC)
                guard descriptor >= 0 else { throw Failure(errno: errno) }
                var status = stat()
                let mode = fstat(descriptor, &status) == 0 ? status.st_mode & S_IFMT : 0
                guard mode == S_IFCHR || mode == S_IFIFO else {
                    closeDescriptor(descriptor)
                    throw Failure(reason: "no longer a FIFO or character device")
                }
            case .replaced(let path):
                // A fresh name beside `path`, created with the mode any file the user
                // writes gets (the umask applies), unlike mkstemp's private 0600.
                descriptor = -1
                for _ in 0..<8 where descriptor < 0 {
                    let name = path + ".\(String(UInt32.random(in: 0...UInt32.max), radix: 36)).tmp"
                    descriptor = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
                    if descriptor >= 0 { temporary = name } else if errno != EEXIST { break }
                }
                guard descriptor >= 0 else { throw Failure(errno: errno) }
            }
        }

        deinit { close() }

        /// Appends `piece`; a failure is kept for `flush()` and drops what follows.
        public func write(_ piece: String) {
            guard failure == 0, descriptor >= 0 else { return }
            var piece = piece
            failure = piece.withUTF8 { writeAll(descriptor, UnsafeRawBufferPointer($0)) }
        }

        /// Why a write failed, once one has: the output takes no more.
        public var failureReason: String? { failure == 0 ? nil : String(cString: strerror(failure)) }

        /// Throws the first write's failure; syncs a replaced file to disk, so that the
        /// rename never publishes a name whose bytes a power cut could lose.
        public func flush() throws(Failure) {
            if failure == 0, isReplacedFile, fsync(descriptor) != 0 { failure = errno }
            if failure != 0 { throw Failure(errno: failure) }
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

        /// Closes the output (never stdout), removing an uncommitted temporary file.
        public func close() {
            if descriptor >= 0, descriptor != STDOUT_FILENO { closeDescriptor(descriptor) }
            descriptor = -1
            if let temporary { unlink(temporary) }
            temporary = nil
        }
    }
}

/// `close(2)`, for the `Writer`, whose own `close()` hides the function's name.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }

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
