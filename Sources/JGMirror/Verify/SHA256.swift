import CCrypto
import Synchronization

/// An incremental SHA-256 (or, asked for, SHA-512) over OpenSSL's EVP interface,
/// which picks the CPU's SHA instructions when it has them (the deprecated
/// `SHA256_*` calls may not).
///
/// Not for use from two threads at once; it may be handed from one thread to
/// another (`PrefixHasher` guarantees one user at a time). `@unchecked Sendable`:
/// in debug builds each call marks the context busy and traps when it already was,
/// so two threads inside it at once do not go unseen.
final class SHA256: @unchecked Sendable {
    private let context: OpaquePointer
    /// Set while a call uses `context` (debug builds).
    private let busy = Atomic<Bool>(false)

    /// The digests items may name: `sha256:` and `sha512:` (SHA256SUMS, SHA512SUMS).
    enum Algorithm: Sendable {
        case sha256, sha512
    }

    /// Returns nil only when libcrypto cannot allocate a context.
    init?(_ algorithm: Algorithm = .sha256) {
        guard let context = EVP_MD_CTX_new() else { return nil }
        guard EVP_DigestInit_ex(context, algorithm == .sha256 ? EVP_sha256() : EVP_sha512(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            return nil
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        enter()
        defer { leave() }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// Marks the context busy; traps, in debug builds, when another thread has it.
    private func enter() {
        assert(!busy.exchange(true, ordering: .acquiring), "one SHA256 used by two threads at once")
    }

    private func leave() {
        busy.store(false, ordering: .releasing)
    }

    /// The digest as lower-case hex; the hasher is spent afterwards.
    func finalizeHex() -> String {
        // EVP_MAX_MD_SIZE: room for SHA-512's 64 bytes.
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        enter()
        EVP_DigestFinal_ex(context, &digest, &length)
        leave()
        return SHA256.hex(digest.prefix(Int(length)))
    }

    /// SHA-256 (or `algorithm`) of an in-memory buffer.
    static func hex(of bytes: [UInt8], algorithm: Algorithm = .sha256) -> String? {
        guard let hasher = SHA256(algorithm) else { return nil }
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalizeHex()
    }

    private static let digits = Array("0123456789abcdef".utf8)

    static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
