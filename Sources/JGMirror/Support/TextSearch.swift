/// Substring search on UTF-8 bytes. Foundation's `range(of:)` and `contains(_:)` on
/// Linux bridge through `NSString` and dominated planning a 100,000-item manifest.
extension StringProtocol where Index == String.Index {
    /// The first occurrence of the ASCII `literal`, or nil.
    func range(ofASCII literal: StaticString) -> Range<String.Index>? {
        let needle = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard let first = needle.first else { return nil }
        let bytes = utf8
        var from = bytes.startIndex
        while let start = bytes[from...].firstIndex(of: first) {
            var position = start
            var matched = true
            for byte in needle {
                guard position != bytes.endIndex, bytes[position] == byte else {
                    matched = false
                    break
                }
                position = bytes.index(after: position)
            }
            if matched { return start..<position }
            from = bytes.index(after: start)
        }
        return nil
    }

    func contains(ascii literal: StaticString) -> Bool { range(ofASCII: literal) != nil }
}
