import Foundation

/// Reading symbolic links.
enum Symlink {
    /// The target of the symlink `name` in the folder open as `folder` (with
    /// `AT_FDCWD`, `name` is a path), its bytes read as UTF-8; nil, with `errno` as
    /// `readlinkat` left it, when there is no symlink to read.
    static func target(in folder: Int32 = AT_FDCWD, _ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(folder, name, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
