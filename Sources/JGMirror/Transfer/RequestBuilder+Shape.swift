extension RequestBuilder.Shape {
    /// What a connection's next request asks for (docs/engine.md#politeness), from
    /// where it stands: once the length is known, the rest of its region (to the file's
    /// end when it owns none), ranged whenever that is not the whole file or ranges are
    /// in use, with `If-Range` when it goes to the source the validators came from.
    /// Before the length is known, when more connections may follow, the first
    /// `firstBound` bytes (`bytes=0-N`: it reveals length, validators and range support
    /// without a HEAD, and a server never sends more than that before the item has cut
    /// its regions, however large the file); else the plain file. The item's conditions
    /// go with its first byte.
    ///
    /// - Parameters:
    ///   - from: the connection's next byte.
    ///   - length: the file's length; nil before a response told it.
    ///   - regionEnd: where the connection's region ends, when it owns one.
    ///   - ifRange: the validator for `If-Range`; nil when this source did not give it.
    static func next(
        url: String, from: Int64, length: Int64?, regionEnd: Int64?, rangesSupported: Bool, ifRange: String?, connections: Int,
        isFileSource: Bool, conditions: [String], firstBound: Int64
    ) -> Self {
        var shape = Self(url: url, from: from, end: nil, ranged: false)
        if let length {
            let end = regionEnd ?? length
            shape.end = end
            shape.ranged = from > 0 || end < length || rangesSupported
            shape.ifRange = ifRange
        } else {
            shape.ranged = from > 0 || (connections > 1 && !isFileSource)
            if from == 0, shape.ranged { shape.end = firstBound }
            // Until a response tells the length, the request may be answered 304.
            if from == 0 { shape.conditions = conditions }
        }
        return shape
    }
}
