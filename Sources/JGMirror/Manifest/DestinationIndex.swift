/// A manifest's destinations as the checks across items look them up, each entry
/// an item's index under the hash of its destination (12 bytes an entry), where a
/// dictionary keyed by the destinations held a copy of each (their text now lives
/// in the items' `TextArena`s).
struct DestinationIndex {
    private var byHash: [Int: Int32] = [:]
    /// Destinations whose hash an earlier, different destination holds.
    private var collided: [String: SourceLocation] = [:]
    private let hash: (String) -> Int

    /// `hash` is `Hasher`'s unless a test makes destinations collide.
    init(capacity: Int, hash: @escaping (String) -> Int = DestinationIndex.hash) {
        self.hash = hash
        byHash.reserveCapacity(capacity)
    }

    /// Where the item with destination `dest` is among `items`, if one has it.
    func location(of dest: String, in items: ManifestItemChunks) -> SourceLocation? {
        guard let index = byHash[hash(dest)] else { return nil }
        let item = items[Int(index)]
        return item.dest == dest ? item.destLocation : collided[dest]
    }

    /// Adds the item at `index` of `items`, whose destination `dest` is not in the index yet.
    mutating func insert(_ dest: String, at index: Int, of items: ManifestItemChunks) {
        let key = hash(dest)
        if byHash[key] != nil {
            collided[dest] = items[index].destLocation
        } else {
            byHash[key] = Int32(index)
        }
    }

    static func hash(_ dest: String) -> Int {
        var hasher = Hasher()
        hasher.combine(dest)
        return hasher.finalize()
    }
}
