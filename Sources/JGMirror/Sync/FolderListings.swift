/// What each folder of a plan held when `RootConfinement.check` read it. A name it
/// lacked then is taken as absent when the run first looks at its item, instead of
/// a `stat` each: a file made in between by another process is a race the `stat`
/// had too (it could come just after), and the rename onto it is the same.
///
/// Asked about every item of a walk, and of its part and state files, so a question
/// allocates nothing and hashes the item's folder and name once: folders are found by
/// a hash of their path (confirmed by comparing the path; two folders whose hashes
/// collide keep one listing, and the other's names may all be there), and the
/// name's hash goes on over each suffix asked about.
struct FolderListings: Sendable {
    private let listings: [UInt64: (folder: String, listing: RootConfinement.Listing)]

    /// No listing: every name may be there.
    init() { listings = [:] }

    init(_ listings: [String: RootConfinement.Listing]) {
        var byHash: [UInt64: (folder: String, listing: RootConfinement.Listing)] = [:]
        for (folder, listing) in listings { byHash[Self.key(folder.utf8)] = (folder, listing) }
        self.listings = byHash
    }

    /// What `path`'s folder held, for questions about `path` and the names beside it
    /// that extend it (`.jgpart`, `.jgd`).
    func names(at path: String) -> Names {
        let folder: Substring
        let name: Substring
        if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) {
            folder = path[..<slash]
            name = path[path.utf8.index(after: slash)...]
        } else {
            folder = ""
            name = path[...]
        }
        guard let entry = listings[Self.key(folder.utf8)], entry.folder == folder else {
            return Names(listing: nil, name: nil)
        }
        return Names(listing: entry.listing, name: NameHash(name.utf8))
    }

    private static func key(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash = NameHash.basis
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* NameHash.prime }
        return hash
    }

    /// One folder's listing and one name in it.
    struct Names {
        let listing: RootConfinement.Listing?
        let name: NameHash?

        /// False only when the folder surely lacked the name followed by `suffix`.
        func mayHold(suffix: String = "") -> Bool {
            guard let listing else { return true }
            return listing.mayHold(suffix.isEmpty ? name : name?.extended(by: suffix.utf8))
        }
    }
}

/// A hash of a file name's bytes with ASCII letters folded to lower case (64-bit
/// FNV-1a), so that a folder on a case-insensitive file system (APFS, vfat, a
/// casefold ext4 folder) holding `README` is not taken to lack `Readme`. A name with
/// a byte past ASCII, which such a file system may fold its own way, has none. A
/// collision only costs a `stat`.
struct NameHash: Hashable, Sendable {
    static let basis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x100_0000_01b3

    private(set) var state = NameHash.basis

    /// The hash as a set of names holds it.
    var value: Int { Int(truncatingIfNeeded: state) }

    init?(_ bytes: some Sequence<UInt8>) {
        guard let hash = NameHash(state: Self.basis, adding: bytes) else { return nil }
        self = hash
    }

    private init?(state: UInt64, adding bytes: some Sequence<UInt8>) {
        var state = state
        for byte in bytes {
            guard byte < 0x80 else { return nil }
            state = (state ^ UInt64(TextSearch.lowerASCII(byte))) &* Self.prime
        }
        self.state = state
    }

    /// The hash of the name with `suffix` appended.
    func extended(by suffix: some Sequence<UInt8>) -> NameHash? { NameHash(state: state, adding: suffix) }
}
