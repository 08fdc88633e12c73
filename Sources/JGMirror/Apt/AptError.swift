import Foundation

/// Why a file of an apt repository (InRelease, Release, an index) is refused. Each
/// names the file as the user knows it (`dists/bookworm/InRelease`, or its URL) and,
/// where there is one, the line.
enum AptError: Error, Equatable, Sendable, LocalizedError {
    /// The file breaks deb822's rules, or a field apt needs is missing or invalid.
    case malformed(file: String, line: Int, String)
    /// InRelease is not exactly one cleartext-signed message, or its signed text is
    /// not the text gpgv verified.
    case notClearsigned(file: String, line: Int, String)
    /// gpgv refused the signature (or could not run): gpgv's reason.
    case signature(file: String, String)
    /// Release's `Date` is older than the Release the mirror holds: an old, validly
    /// signed Release served again (a replay).
    case replayed(file: String, date: Int64, held: Int64)
    /// Release's `Valid-Until` has passed.
    case expired(file: String, validUntil: Int64, now: Int64)
    /// Release has no `Date`, and the one the mirror holds has: it cannot be shown newer.
    case undated(file: String)
    /// Release names another suite (`Suite` and `Codename` both differ from the one asked for).
    case otherSuite(file: String, expected: String, found: String)
    /// The bytes of an index differ from what Release says of them (size or hash).
    case mismatch(file: String, String)
    /// A compressed index cannot be decompressed.
    case decompression(file: String, DecompressionError)
    /// A path in the file would leave the repository, or land where jgmirror keeps its state.
    case unsafePath(file: String, line: Int, path: String, String)
    /// What the set asks for is not in the repository (a component, an architecture,
    /// an index in a form jgmirror reads).
    case notInRelease(file: String, String)

    /// The report's code: an untrustworthy Release or index is an integrity failure
    /// (exit 3: `signature`, `stale_release` for a Release signed but older than the
    /// one held or expired, or `checksum_mismatch`); a file that cannot be read as an
    /// apt file fails its set as a list does (`list`, exit 1).
    var code: ErrorCode {
        switch self {
        case .replayed, .expired, .undated: .staleRelease
        case .signature, .notClearsigned, .otherSuite: .signature
        case .mismatch: .checksumMismatch
        case .malformed, .decompression, .unsafePath, .notInRelease: .list
        }
    }

    /// One line for the person at the terminal.
    var message: String {
        switch self {
        case .malformed(let file, let line, let reason): "\(file) line \(line): \(reason)"
        case .notClearsigned(let file, let line, let reason):
            "\(file) line \(line): not one OpenPGP cleartext-signed message: \(reason)"
        case .signature(let file, let reason): "\(file): \(reason)"
        case .replayed(let file, let date, let held):
            "\(file) is dated \(HTTPDate.format(seconds: date)), older than the \(HTTPDate.format(seconds: held)) the mirror "
                + "holds: an old Release served again (replay), refused"
        case .expired(let file, let validUntil, let now):
            "\(file) was valid until \(HTTPDate.format(seconds: validUntil)); it is \(HTTPDate.format(seconds: now)) now"
        case .undated(let file): "\(file) has no Date, so it cannot be shown to be newer than the Release the mirror holds"
        case .otherSuite(let file, let expected, let found): "\(file) is the Release of '\(found)', not of '\(expected)'"
        case .mismatch(let file, let reason): "\(file): \(reason)"
        case .decompression(let file, let problem): "\(file): \(problem.message)"
        case .unsafePath(let file, let line, let path, let reason):
            "\(file) line \(line): '\(Rules.abbreviated(Rules.printable(path)))' \(reason)"
        case .notInRelease(let file, let reason): "\(file): \(reason)"
        }
    }

    var errorDescription: String? { message }

    /// A deb822 problem of `file`.
    init(_ problem: Deb822Reader.Problem, file: String) {
        self = .malformed(file: file, line: problem.line, problem.message)
    }
}
