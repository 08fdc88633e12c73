import Foundation

/// Everything wrong with a manifest: syntax, unknown keys, wrong types, bad values,
/// duplicate or escaping destinations. Every such error exits 2 before any byte is
/// fetched (docs/manifest.md#errors, docs/exit-codes.md#exit-codes).
public struct ManifestError: LocalizedError, Sendable, Equatable {
    /// The manifest's path as the user gave it.
    public var file: String
    /// Where in the file; nil when the file itself could not be read.
    public var location: SourceLocation?
    /// What is wrong, for the person at the terminal.
    public var message: String

    public init(file: String, location: SourceLocation?, message: String) {
        self.file = file
        self.location = location
        self.message = message
    }

    /// `FILE:LINE:COL: message`, the shape compilers use, so editors can jump to it.
    /// Control characters (a NUL from a percent-decoded URL, an escape sequence) are
    /// shown escaped, never written raw to a terminal.
    public var errorDescription: String? {
        if let location { return Rules.printable("\(file):\(location.line):\(location.column): \(message)") }
        return Rules.printable("\(file): \(message)")
    }
}

extension ManifestError {
    /// This problem as a warning, saying which option makes it an error.
    func allowedUnless(_ option: String) -> ManifestError {
        var warning = self
        warning.message += " (\(option) makes this an error)"
        return warning
    }
}
