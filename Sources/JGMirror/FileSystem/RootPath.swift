/// A path below the mirror root split into the names `RootDirectory` walks, one
/// folder at a time. Pure: which names a path may contain is decided here, what
/// is on disk is `RootDirectory`'s business.
enum RootPath {
    /// Why a path cannot be walked below the root.
    enum Refusal: Error, Equatable {
        /// Starts with `/`: it would not be below the root.
        case absolute
        /// Has a `..` component, which could climb out of the root.
        case parent
        /// Has a NUL byte, which no file name may hold.
        case nul
    }

    /// The names of `relative`, empty ones (`a//b`, a trailing `/`) and `.` left out;
    /// an empty list means the root itself.
    static func components(_ relative: String) -> Result<[String], Refusal> {
        let bytes = relative.utf8
        if bytes.first == UInt8(ascii: "/") { return .failure(.absolute) }
        if bytes.contains(0) { return .failure(.nul) }
        var names: [String] = []
        for name in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if name.elementsEqual(".".utf8) { continue }
            if name.elementsEqual("..".utf8) { return .failure(.parent) }
            names.append(String(Substring(name)))
        }
        return .success(names)
    }
}
