import Foundation

/// Substring search on UTF-8 bytes. Foundation's `range(of:)` and `contains(_:)` on
/// Linux bridge through `NSString` and dominated planning a 100,000-item manifest;
/// a generic walk over `String.UTF8View` indices still cost 9 % of it, so the search
/// runs on the contiguous bytes with `memchr` and `memcmp`.
extension StringProtocol where Index == String.Index {
    /// The first occurrence of the ASCII `literal`, or nil.
    func range(ofASCII literal: StaticString) -> Range<String.Index>? {
        guard let offset = utf8Offset(ofASCII: literal) else { return nil }
        let start = utf8.index(utf8.startIndex, offsetBy: offset)
        return start..<utf8.index(start, offsetBy: literal.utf8CodeUnitCount)
    }

    func contains(ascii literal: StaticString) -> Bool { utf8Offset(ofASCII: literal) != nil }

    /// Whether the text starts with the ASCII `literal`, ignoring ASCII case (a URL's
    /// scheme, a header's name), without building a lower-cased copy.
    func hasPrefix(asciiCaseInsensitive literal: StaticString) -> Bool {
        let prefix = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        var bytes = utf8.makeIterator()
        for expected in prefix {
            guard let byte = bytes.next(), TextSearch.lowerASCII(byte) == TextSearch.lowerASCII(expected) else { return false }
        }
        return true
    }

    private func utf8Offset(ofASCII literal: StaticString) -> Int? {
        let search = { (haystack: UnsafeBufferPointer<UInt8>) -> Int? in
            TextSearch.offset(of: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount), in: haystack)
        }
        if let found = utf8.withContiguousStorageIfAvailable(search) { return found }
        return Array(utf8).withUnsafeBufferPointer(search)
    }
}

enum TextSearch {
    /// `byte` with ASCII `A`–`Z` lowered; every other byte as it is.
    static func lowerASCII(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// Byte offset of the first `needle` in `haystack`.
    static func offset(of needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = needle.first, let base = haystack.baseAddress, needle.count <= haystack.count else {
            return nil
        }
        let last = haystack.count - needle.count
        var from = 0
        while from <= last, let hit = memchr(base + from, Int32(first), last - from + 1) {
            let offset = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if memcmp(base + offset, needle.baseAddress!, needle.count) == 0 { return offset }
            from = offset + 1
        }
        return nil
    }
}
