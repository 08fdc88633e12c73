import Foundation

/// A Release shaped as Debian's (bookworm's fields, a few of its files), hashes made up.
enum ReleaseFixture {
    static func hash(_ seed: Int, digits: Int = 64) -> String {
        String(repeating: String(format: "%02x", seed % 256), count: digits / 2)
    }

    /// `paths` with sizes 100, 101, …, hashed by their position.
    static func text(
        _ paths: [String], extra: String = "", sha512: Bool = false, architectures: String = "all amd64 arm64",
        components: String = "main contrib non-free-firmware"
    ) -> String {
        var text = """
            Origin: Debian
            Label: Debian
            Suite: stable
            Version: 12.5
            Codename: bookworm
            Changelogs: https://metadata.ftp-master.debian.org/changelogs/@CHANGEPATH@_changelog
            Date: Sat, 10 Feb 2024 09:50:01 UTC
            Acquire-By-Hash: yes
            No-Support-for-Architecture-all: Packages
            Architectures: \(architectures)
            Components: \(components)
            Description: Debian 12.5 Released 10 February 2024
            \(extra)MD5Sum:
             0ed6d4c8891eb86358b94bb35d9e4da4  1484322 contrib/Contents-all

            """
        text += "SHA256:\n" + paths.enumerated().map { " \(hash($0)) \(100 + $0) \($1)\n" }.joined()
        if sha512 { text += "SHA512:\n" + paths.enumerated().map { " \(hash($0, digits: 128)) \(100 + $0) \($1)\n" }.joined() }
        return text
    }
}
