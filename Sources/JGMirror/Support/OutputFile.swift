import Foundation

/// One of a run's outputs (the JSON or JUnit report, the metrics) written beside its
/// path under a fresh name, synced, then renamed onto it: a reader, or the file after
/// a crash, holds the old file or the whole new one, never a part.
public enum OutputFile {
    /// Why an output could not be written: the system's words for the step that failed.
    public struct Failure: Error {
        public let reason: String
    }

    /// Writes the pieces `produce` hands out to `path`, in order.
    public static func write(_ path: String, _ produce: ((String) -> Void) -> Void) throws(Failure) {
        // A fresh name beside `path`, created with the mode any file the user writes
        // gets (the umask applies), unlike mkstemp's private 0600.
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 where fd < 0 {
            temporary = path + ".\(String(UInt32.random(in: 0...UInt32.max), radix: 36)).tmp"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            if fd < 0, errno != EEXIST { break }
        }
        guard fd >= 0 else { throw Failure(reason: String(cString: strerror(errno))) }
        var failure: Int32 = 0
        produce { piece in
            guard failure == 0 else { return }
            var piece = piece
            failure = piece.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure != 0 else { return }
        unlink(temporary)
        throw Failure(reason: String(cString: strerror(failure)))
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
