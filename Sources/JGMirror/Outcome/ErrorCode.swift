/// Every failure a report can show, as the report's `error.code` (docs/exit-codes.md#error-codes);
/// the exit class each leads to is `ExitCode`'s table (`exitCode`).
///
/// The one list of codes: reports, JUnit, events and the terminal print `rawValue`;
/// decisions compare cases, never spellings.
public enum ErrorCode: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible, CaseIterable {
    /// The server answered with this HTTP status (`http_404`).
    case http(Int)
    /// No TCP connection could be made (`connect`).
    case connect
    /// The host name did not resolve (`resolve`).
    case resolve
    /// No byte arrived for the item's timeout (`timeout`).
    case timeout
    /// A source sent under `min_rate` over the item's `timeout`, across all the
    /// requests it was given, and no other source was left (`too_slow`).
    case tooSlow
    /// The connection dropped or ended early (`connection`).
    case connection
    /// The server answered outside HTTP's rules: another byte range than asked,
    /// a body shorter than its `Content-Range` (`protocol`).
    case protocolViolation
    /// Certificate or handshake failure (`tls`).
    case tls
    /// Too many redirects, or one to a scheme other than http/https (`redirect`).
    case redirect
    /// A `file:` source does not exist or cannot be read (`not_found`).
    case notFound
    /// The server refused every byte range (`range`).
    case range
    /// Any other transfer failure libcurl reported (`transfer`).
    case transfer
    /// The remote file changed again after every restart (`changed`).
    case changed
    /// The length differs from the manifest's `size`, or the body from its announced length (`size_mismatch`).
    case sizeMismatch
    /// The body is larger than the item's `max_size` (`too_large`).
    case tooLarge
    /// The SHA-256 differs from the manifest's (`checksum_mismatch`).
    case checksumMismatch
    /// A checksums list's signature does not check out (`signature`).
    case signature
    /// An apt suite's Release is older than the one the mirror publishes (a replay),
    /// past its `Valid-Until`, or undated where the held one is dated: signed, but not
    /// to be published (`stale_release`, docs/apt.md#exit-codes).
    case staleRelease
    /// A checksums list could not be fetched or parsed, or names no usable file: its
    /// set fails, the rest of the run goes on (`list`).
    case list
    /// A set's list would have `--delete` remove more than `--max-delete`'s share of
    /// the set's folder: the set fails alone, none of its files deleted and its list
    /// not published; other sets go on (`list_shrunk`).
    case listShrunk
    /// `sync --delete` left a file no item produces, because the run was not clean
    /// or the list deciding it failed (`delete_skipped`).
    case deleteSkipped
    /// `verify`: the file is not on disk (`missing`).
    case missing
    /// `verify`: a `link:` item's destination is not a symlink to its target (`link_mismatch`).
    case linkMismatch
    /// The disk or quota is full (`disk_full`).
    case diskFull
    /// The file system refused access (`permission_denied`).
    case permissionDenied
    /// Any other local I/O failure (`io_error`).
    case ioError
    /// A destination would leave the root (`unsafe_path`).
    case unsafePath
    /// libcurl could not be set up on this machine (`curl`).
    case curl
    /// Stopped by a signal or a cancel (`interrupted`).
    case interrupted
    /// The manifest or a checksums file is invalid (`manifest`).
    case manifest
    /// Another sync holds the tree, a folder above or below it, or another process
    /// writes the part file (`locked`).
    case locked
    /// The command line asks for something impossible, such as a tag filter that
    /// selects no item (`usage`).
    case usage
    /// The run could not start on this machine: the root cannot be made or locked (`local`).
    case local
    /// `--delete` would remove more files than `--max-delete` allows (`max_delete`).
    case maxDelete
    /// `report merge` has no report of one or more shards of the run: the merged
    /// report is incomplete (`shard_missing`).
    case shardMissing
    /// The item's host gave no answer for `host_grace` (`host_down`, docs/hosts.md#host-states).
    case hostDown
    /// The item's host asked to be left alone longer than `max_wait` or past the
    /// run's deadline (`rate_limited`, docs/hosts.md#rate-limits).
    case rateLimited
    /// The run reached `--max-duration` before the item ended (`deadline`).
    case deadline

    /// The report spelling, e.g. `http_404`, `size_mismatch`: `kind`'s, with the
    /// status after `http_`.
    public var rawValue: String {
        if case .http(let status) = self { return "http_\(status)" }
        return kind.rawValue
    }

    /// Every code, `http` once (as `http(404)`, standing for every status), in the
    /// order of `Kind`, whose list the compiler keeps (`CaseIterable`).
    public static let allCases = Kind.allCases.map(\.code)

    /// The code a report spells `rawValue`; nil for a spelling no version wrote.
    public init?(rawValue: String) {
        if rawValue.hasPrefix("http_"), let status = Int(rawValue.dropFirst(5)), (100...999).contains(status) {
            self = .http(status)
        } else if let kind = Kind(rawValue: rawValue), kind != .http {
            self = kind.code
        } else {
            return nil
        }
    }

    public var description: String { rawValue }
}
