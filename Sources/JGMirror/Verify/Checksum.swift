/// SHA-256 of bytes in memory, for callers that are not hashing files.
public enum Checksum {
    /// Lower-case hex SHA-256 of `bytes`; nil only if libcrypto cannot allocate.
    public static func sha256(_ bytes: [UInt8]) -> String? { SHA256.hex(of: bytes) }
}
