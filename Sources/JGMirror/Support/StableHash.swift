/// FNV-1a over UTF-8 bytes: a hash that is the same on every machine and every run,
/// unlike `Hasher`, which is seeded per process. Sharding depends on that.
enum StableHash {
    static func fnv1a64(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
