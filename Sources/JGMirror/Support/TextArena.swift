/// The UTF-8 text of many items' URLs and destinations, one after another in one
/// buffer. As heap strings, each cost 48–80 bytes on top of its text (a header, and
/// the allocator's rounding): most of what a 100,000-item manifest and its plan held.
///
/// Appended to only while a manifest is parsed or its sets expanded, on one thread
/// (`Builder`), and read-only once the items are shared; a URL or destination
/// changed later goes into an arena of its own (`ItemTexts.init(url:dest:)`).
final class TextArena: @unchecked Sendable {
    /// Where one text lies in its arena.
    struct Span: Sendable {
        fileprivate var offset: UInt32
        fileprivate var count: UInt32
    }

    private var bytes: [UInt8] = []
    private let capacity: Int

    /// An arena that holds `capacity` bytes at most; its offsets fit in 32 bits.
    fileprivate init(capacity: Int) {
        precondition(capacity <= UInt32.max)
        self.capacity = capacity
        bytes.reserveCapacity(capacity)
    }

    /// Appends `url` and `dest`; nil, and nothing appended, when they do not both fit.
    fileprivate func append(_ url: String, _ dest: String) -> (Span, Span)? {
        guard bytes.count + url.utf8.count + dest.utf8.count <= capacity else { return nil }
        return (append(url), append(dest))
    }

    private func append(_ text: String) -> Span {
        let span = Span(offset: UInt32(bytes.count), count: UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
        return span
    }

    /// The text at `span`.
    fileprivate subscript(span: Span) -> String {
        bytes.withUnsafeBufferPointer { buffer in
            let start = Int(span.offset)
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<start + Int(span.count)]), as: UTF8.self)
        }
    }

    /// Hands out room for items' texts in a run of arenas of `capacity` bytes,
    /// starting the next when one is full. Owned by one thread while it builds items.
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

/// An item's URL and destination, as two spans of a `TextArena` (24 bytes inline,
/// and their text in the arena).
struct ItemTexts: Sendable {
    private let arena: TextArena
    private let urlSpan: TextArena.Span
    private let destSpan: TextArena.Span

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
