/// An expected SHA-256 as items hold it: 64 lower-case hex digits (every checksum
/// the parser, a checksums list or `get --sha256` gives, once lower-cased) are kept as
/// their 32 raw bytes, inline, and spelled out again only when read. A 64-digit hex
/// `String` is a heap object of 112 bytes; a 100,000-item plan held one per item.
///
/// Any other text (only the library's callers can set one) is kept as it is, so
/// `sha256` reads back exactly what was set.
struct PackedSHA256: Sendable, Hashable {
    private enum Storage: Sendable, Hashable {
        /// The digest's bytes as four big-endian words, in order.
        case digest(UInt64, UInt64, UInt64, UInt64)
        case text(String)
    }

    private let storage: Storage

    init(_ text: String) {
        if let words = PackedSHA256.words(ofLowercaseHex: text) {
            storage = .digest(words.0, words.1, words.2, words.3)
        } else {
            storage = .text(text)
        }
    }

    /// The text it was made from.
    var text: String {
        switch storage {
        case .text(let text): return text
        case .digest(let a, let b, let c, let d):
            return String(unsafeUninitializedCapacity: 64) { buffer in
                func spell(_ word: UInt64, at start: Int) {
                    for nibble in 0..<16 {
                        let value = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * nibble)) & 0x0f
                        buffer[start + nibble] = value < 10 ? 48 + value : 87 + value
                    }
                }
                spell(a, at: 0)
                spell(b, at: 16)
                spell(c, at: 32)
                spell(d, at: 48)
                return 64
            }
        }
    }

    /// Whether it is kept as raw bytes (64 lower-case hex digits).
    var isPacked: Bool {
        if case .digest = storage { return true }
        return false
    }

    /// Whether `text` is the checksum this one holds, without spelling it out.
    func matches(_ text: String) -> Bool {
        switch storage {
        case .text(let own): return own == text
        case .digest: return PackedSHA256(text) == self
        }
    }

    private static func words(ofLowercaseHex text: String) -> (UInt64, UInt64, UInt64, UInt64)? {
        guard text.utf8.count == 64 else { return nil }
        var native = text
        native.makeContiguousUTF8()
        return native.utf8.withContiguousStorageIfAvailable { bytes -> (UInt64, UInt64, UInt64, UInt64)? in
            func word(_ start: Int) -> UInt64? {
                var word: UInt64 = 0
                for byte in bytes[start..<start + 16] {
                    switch byte {
                    case 48...57: word = word << 4 | UInt64(byte - 48)
                    case 97...102: word = word << 4 | UInt64(byte - 87)
                    default: return nil
                    }
                }
                return word
            }
            guard let a = word(0), let b = word(16), let c = word(32), let d = word(48) else { return nil }
            return (a, b, c, d)
        } ?? nil
    }
}
