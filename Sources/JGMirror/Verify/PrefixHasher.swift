import Dispatch
import Foundation
import Synchronization

/// Hashes a part file's contiguous prefix while the download continues, on its own
/// serial queue, so that verifying a finished file costs only its last stretch.
///
/// It reads back what the engine wrote (from the page cache), which works the same
/// for a single stream, for many ranges arriving out of order, and for bytes a
/// resumed download already had on disk.
public final class PrefixHasher: PartFileObserver, @unchecked Sendable {
    // Everything below is touched only on `queue`.
    private let queue: DispatchQueue
    private let path: String
    private var fd: Int32 = -1
    private var hasher: SHA256?
    private var hashed: Int64 = 0
    private var failure: VerifyError?

    /// A hasher for the part file at `path`, which may not exist yet.
    public init(path: String) {
        self.path = path
        queue = DispatchQueue(label: "jgmirror.prefix-hasher", target: PrefixHasher.pool)
        hasher = SHA256()
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Hashing queues share the cores with everything else.
    private static let pool = DispatchQueue(label: "jgmirror.hashing", attributes: .concurrent)

    public func prefixCompleted(upTo offset: Int64) {
        queue.async { self.advance(to: offset) }
    }

    /// Hashes a small file's bytes from a copy when they continue the prefix, which
    /// spares opening and reading the part file back (2000 small files: 6000 calls).
    public func written(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        let copy = [UInt8](bytes)
        queue.async {
            guard self.failure == nil, let hasher = self.hasher, offset == self.hashed else { return }
            copy.withUnsafeBytes { hasher.update($0) }
            self.hashed += Int64(copy.count)
        }
    }

    public func restarted() {
        queue.async {
            self.hasher?.reset()
            self.hashed = 0
            self.failure = nil
        }
    }

    /// The digest of the first `length` bytes, once hashed.
    public func finish(length: Int64) async -> Result<String, VerifyError> {
        await withCheckedContinuation { continuation in
            finish(length: length) { continuation.resume(returning: $0) }
        }
    }

    /// Calls `completion` on the hasher's queue with the digest of the first `length` bytes.
    func finish(length: Int64, completion: @escaping @Sendable (Result<String, VerifyError>) -> Void) {
        queue.async {
            self.advance(to: length)
            if let failure = self.failure {
                completion(.failure(failure))
            } else if let hasher = self.hasher, self.hashed == length {
                completion(.success(hasher.finalizeHex()))
            } else if self.hasher == nil {
                completion(.failure(.noHasher))
            } else {
                completion(.failure(.unreadable(path: self.path, reason: "file is shorter than \(length) bytes")))
            }
        }
    }

    private func advance(to offset: Int64) {
        guard failure == nil, let hasher, offset > hashed else { return }
        if fd < 0 {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                failure = .unreadable(path: path, reason: String(cString: strerror(errno)))
                return
            }
        }
        do {
            hashed = try FileHasher.hashRange(fd: fd, from: hashed, to: offset, into: hasher, path: path)
        } catch {
            failure = error
        }
    }
}
