/// A manifest's items in chunks of a fixed size, each allocated once at its full
/// size. An array grown by doubling held up to twice the items' memory (and three
/// times while it moved), and a plan built from one array kept it whole until the
/// last item was resolved; a plan built from chunks frees each as it goes, so a
/// large manifest and its plan are never both whole in memory.
struct ManifestItemChunks: Sendable, Sequence {
    /// Items per chunk: large enough that each chunk is mapped memory of its own,
    /// which goes back to the system when the chunk is freed.
    static let chunkSize = 8192

    private var chunks: [[ManifestItem]] = []
    private(set) var count = 0

    init() {}

    init(_ items: [ManifestItem]) {
        for item in items { append(item) }
    }

    mutating func append(_ item: ManifestItem) {
        if chunks.isEmpty || chunks[chunks.count - 1].count == Self.chunkSize {
            var chunk: [ManifestItem] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(item)
        count += 1
    }

    mutating func append(contentsOf items: some Sequence<ManifestItem>) {
        for item in items { append(item) }
    }

    subscript(index: Int) -> ManifestItem {
        get { chunks[index / Self.chunkSize][index % Self.chunkSize] }
        set { chunks[index / Self.chunkSize][index % Self.chunkSize] = newValue }
    }

    var indices: Range<Int> { 0..<count }

    /// Takes the first chunk out; the caller's copy is the last one.
    mutating func removeFirstChunk() -> [ManifestItem]? {
        guard !chunks.isEmpty else { return nil }
        let chunk = chunks.removeFirst()
        count -= chunk.count
        return chunk
    }

    func makeIterator() -> FlattenSequence<[[ManifestItem]]>.Iterator { chunks.joined().makeIterator() }

    /// Every item, in one array.
    var all: [ManifestItem] {
        var items: [ManifestItem] = []
        items.reserveCapacity(count)
        for chunk in chunks { items += chunk }
        return items
    }
}
