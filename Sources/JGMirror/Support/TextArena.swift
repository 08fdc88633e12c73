/// The UTF-8 text of many items' URLs and destinations, one after another in one
/// fixed allocation. As heap strings, each cost 48–80 bytes on top of its text (a
/// header, and the allocator's rounding): most of what a 100,000-item manifest and
/// its plan held.
///
/// Only a `Builder` appends, and only to bytes no span covers yet: the storage is
/// allocated once at its full capacity and never moves, so a span handed out stays
/// valid, and reading it touches no byte an append writes. A URL or destination
/// changed later goes into an arena of its own (`ItemTexts.init(url:dest:)`).
/// `@unchecked Sendable`: the compiler keeps the appends on one thread (`Builder`
/// is not `Sendable`, and only a builder appends); what crosses threads is spans of
/// bytes written before the arena was shared, which no later append touches.
final class TextArena: @unchecked Sendable {
    /// Where one text lies in its arena.
    struct Span: Sendable {
        fileprivate var offset: UInt32
        fileprivate var count: UInt32
    }

    private let storage: UnsafeMutableRawBufferPointer
    /// Bytes used; changed by the one `Builder` that appends, read by no one else.
    private var used = 0

    /// An arena of `capacity` bytes; its offsets fit in 32 bits.
    fileprivate init(capacity: Int) {
        precondition(capacity <= UInt32.max)
        storage = .allocate(byteCount: max(capacity, 1), alignment: 1)
    }

    deinit { storage.deallocate() }

    /// Appends `url` and `dest`; nil, and nothing appended, when they do not both fit.
    fileprivate func append(_ url: String, _ dest: String) -> (Span, Span)? {
        guard used + url.utf8.count + dest.utf8.count <= storage.count else { return nil }
        return (append(url), append(dest))
    }

    private func append(_ text: String) -> Span {
        let count = text.utf8.count
        let span = Span(offset: UInt32(used), count: UInt32(count))
        UnsafeMutableRawBufferPointer(rebasing: storage[used..<used + count]).copyBytes(from: text.utf8)
        used += count
        return span
    }

    /// The text at `span`.
    fileprivate subscript(span: Span) -> String {
        let start = Int(span.offset)
        let bytes = UnsafeRawBufferPointer(rebasing: storage[start..<start + Int(span.count)])
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Hands out room for items' texts in a run of arenas of `capacity` bytes,
    /// starting the next when one is full. Used by one task, while it makes items;
    /// a builder appends only to arenas it made itself.
    struct Builder {
        /// A megabyte: a span's offset fits in 32 bits, and a half-used last arena
        /// (its pages untouched) wastes little.
        static let capacity = 1 << 20

        private var current: TextArena?

        init() {}

        /// `url` and `dest`, stored in the current arena.
        mutating func texts(url: String, dest: String) -> ItemTexts {
            if let current, let (urlSpan, destSpan) = current.append(url, dest) {
                return ItemTexts(arena: current, urlSpan: urlSpan, destSpan: destSpan)
            }
            let fresh = TextArena(capacity: Self.capacity)
            guard let (urlSpan, destSpan) = fresh.append(url, dest) else { return ItemTexts(url: url, dest: dest) }
            current = fresh
            return ItemTexts(arena: fresh, urlSpan: urlSpan, destSpan: destSpan)
        }
    }
}

/// A builder stays with the task that made it: appends never race.
@available(*, unavailable)
extension TextArena.Builder: Sendable {}

/// An item's URL and destination, as two spans of a `TextArena` (24 bytes inline,
/// and their text in the arena).
struct ItemTexts: Sendable {
    private let arena: TextArena
    private let urlSpan: TextArena.Span
    private let destSpan: TextArena.Span

    /// An empty URL and destination, for an item being parsed.
    static let empty = ItemTexts(url: "", dest: "")

    fileprivate init(arena: TextArena, urlSpan: TextArena.Span, destSpan: TextArena.Span) {
        self.arena = arena
        self.urlSpan = urlSpan
        self.destSpan = destSpan
    }

    /// `url` and `dest` in an arena of their own.
    init(url: String, dest: String) {
        let arena = TextArena(capacity: url.utf8.count + dest.utf8.count)
        (urlSpan, destSpan) = arena.append(url, dest)!
        self.arena = arena
    }

    var url: String { arena[urlSpan] }
    var dest: String { arena[destSpan] }
}
