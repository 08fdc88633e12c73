/// The UTF-8 text of many planned items' URLs and destinations, one after another
/// in one buffer. As heap strings, each cost 48–80 bytes on top of its text (a
/// header, and the allocator's rounding): most of what a 100,000-item plan held.
///
/// Appended to only while a plan is built, on one thread, and read-only once the
/// plan is shared; a changed URL or destination goes into an arena of its own.
final class TextArena: @unchecked Sendable {
    /// Where one text lies in its arena.
    struct Span: Sendable {
        fileprivate var offset: UInt32
        fileprivate var count: UInt32
    }

    /// The bytes an arena made for a plan holds at most, so that a span's offset fits
    /// in 32 bits and a half-used last arena wastes little.
    static let planCapacity = 1 << 20

    private var bytes: [UInt8] = []
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        bytes.reserveCapacity(capacity)
    }

    /// An arena holding `texts` alone.
    static func holding(_ texts: String...) -> (TextArena, [Span]) {
        let arena = TextArena(capacity: texts.reduce(0) { $0 + $1.utf8.count })
        return (arena, texts.map { arena.append($0)! })
    }

    /// Whether `first` and `second` fit after what the arena holds.
    func hasRoom(for first: String, _ second: String) -> Bool {
        bytes.count + first.utf8.count + second.utf8.count <= capacity
    }

    /// Appends both texts; nil, and nothing appended, when they do not both fit.
    func append(_ first: String, _ second: String) -> (Span, Span)? {
        guard hasRoom(for: first, second) else { return nil }
        return (append(first)!, append(second)!)
    }

    private func append(_ text: String) -> Span? {
        let count = text.utf8.count
        guard bytes.count + count <= capacity else { return nil }
        let span = Span(offset: UInt32(bytes.count), count: UInt32(count))
        bytes.append(contentsOf: text.utf8)
        return span
    }

    /// The text at `span`.
    subscript(span: Span) -> String {
        bytes.withUnsafeBufferPointer { buffer in
            let start = Int(span.offset)
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<start + Int(span.count)]), as: UTF8.self)
        }
    }
}
