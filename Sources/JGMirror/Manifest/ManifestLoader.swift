import Foundation

/// Options that change what a manifest may contain.
public struct ManifestOptions: Sendable {
    /// Accept `file://` sources (`--allow-file-urls`, docs/commands.md#options).
    public var allowFileURLs = false
    /// An item without a checksum is an error (`--require-checksums`). Items that a
    /// `checksums:` file may cover are checked once the file is fetched.
    public var requireChecksums = false
    /// Values for `${NAME}` references; the process environment by default.
    public var environment: [String: String] = ProcessInfo.processInfo.environment
    /// Destinations that differ only in case are errors instead of warnings
    /// (`--portable-names`): they are one file on macOS and Windows file systems.
    public var portableNames = false

    public init(allowFileURLs: Bool = false, requireChecksums: Bool = false) {
        self.allowFileURLs = allowFileURLs
        self.requireChecksums = requireChecksums
    }
}

extension Manifest {
    /// Loads and validates the manifest at `path`.
    public static func load(path: String, options: ManifestOptions = ManifestOptions()) throws(ManifestError) -> Manifest {
        let reader = try YAMLEventReader(path: path)
        var parser = ManifestParser(reader: reader, options: options)
        return try parser.parse()
    }

    /// Parses and validates a manifest held in memory; `name` stands for its path in
    /// errors, and relative roots resolve against the current directory.
    public static func parse(
        _ text: String, name: String = "<manifest>", options: ManifestOptions = ManifestOptions()
    ) throws(ManifestError) -> Manifest {
        let reader = try YAMLEventReader(string: text, name: name)
        var parser = ManifestParser(reader: reader, options: options)
        return try parser.parse()
    }
}
