import Foundation

/// Hashes files on disk with large sequential reads.
public enum FileHasher {
    /// Read size: large enough that syscalls vanish next to hashing.
    static let chunk = 1 << 20

    /// SHA-256 (lower-case hex) of the file at `path`.
    public static func sha256(path: String) throws(VerifyError) -> String {
        try hex(path: path, algorithm: .sha256)
    }

    /// SHA-512 (lower-case hex) of the file at `path`.
    public static func sha512(path: String) throws(VerifyError) -> String {
        try hex(path: path, algorithm: .sha512)
    }

    static func hex(path: String, algorithm: SHA256.Algorithm) throws(VerifyError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        return try hex(fd: fd, path: path, algorithm: algorithm)
    }

    /// SHA-256 (lower-case hex) of the open file `fd`, read from its start; `path`
    /// names it in errors.
    static func sha256(fd: Int32, path: String) throws(VerifyError) -> String {
        try hex(fd: fd, path: path, algorithm: .sha256)
    }

    /// The digest of the open file `fd` from its start.
    static func hex(fd: Int32, path: String, algorithm: SHA256.Algorithm) throws(VerifyError) -> String {
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        guard let hasher = SHA256(algorithm) else { throw .noHasher }
        try hashRange(fd: fd, from: 0, to: nil, into: hasher, path: path)
        return hasher.finalizeHex()
    }

    /// Feeds bytes `[from, to)` of `fd` (to end of file when `to` is nil) into `hasher`;
    /// returns the offset reached.
    @discardableResult
    static func hashRange(fd: Int32, from: Int64, to end: Int64?, into hasher: SHA256, path: String) throws(VerifyError) -> Int64 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 4096)
        defer { buffer.deallocate() }
        var offset = from
        while end.map({ offset < $0 }) ?? true {
            let want = end.map { min(Int64(chunk), $0 - offset) } ?? Int64(chunk)
            let count = pread(fd, buffer.baseAddress, Int(want), off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return offset
    }

    /// Hashes many files on all cores; `results[i]` belongs to `paths[i]`.
    public static func sha256(paths: [String], concurrency: Int = ProcessInfo.processInfo.activeProcessorCount)
        -> [Result<String, VerifyError>]
    {
        concurrentMap(count: paths.count, threads: concurrency) { index in
            Result { () throws(VerifyError) -> String in try sha256(path: paths[index]) }
        }
    }
}
