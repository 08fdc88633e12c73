extension ErrorCode {
    /// What the code means, for the person reading a report: the table of
    /// docs/exit-codes.md#error-codes is made from it (`ReferencePage`), so a new code
    /// is explained where it is declared.
    public var meaning: String {
        switch self {
        case .http: "the server answered with this HTTP status (http_404, http_503, …)"
        case .connect: "no TCP connection could be made"
        case .resolve: "the host name did not resolve"
        case .timeout: "no byte arrived for the item's timeout"
        case .tooSlow:
            "a source sent less than min_rate over the item's timeout, across every request it was given, and no other source was left"
        case .connection: "the connection dropped or ended early"
        case .protocolViolation:
            "the server answered outside HTTP's rules: another byte range than asked, a body shorter than its Content-Range"
        case .tls: "the TLS certificate or handshake failed"
        case .redirect: "too many redirects, or one to a scheme other than http or https"
        case .notFound: "a file: source does not exist or cannot be read"
        case .range: "the server refused every byte range"
        case .transfer: "any other transfer failure libcurl reported"
        case .changed: "the remote file changed again after every restart"
        case .sizeMismatch: "the length differs from the manifest's size, or the body from its announced length"
        case .tooLarge: "the body is larger than the item's max_size, or than the file system"
        case .checksumMismatch: "the bytes do not have the item's checksum; they are kept aside, the destination untouched"
        case .signature:
            "a checksums list's or an apt Release's signature does not check out (bad, missing, or an unknown key)"
        case .staleRelease:
            "an apt suite's Release is older than the one the mirror publishes (a replay), or past its Valid-Until; nothing of the suite changes"
        case .list: "a checksums list could not be fetched or parsed, or names no usable file; its set fails alone"
        case .listShrunk:
            "a set's list would make --delete remove more than --max-delete's share of its folder; the set fails alone, none of its files deleted"
        case .deleteSkipped: "sync --delete left a file no item produces, because the run was not clean"
        case .missing: "verify: the file is not on disk"
        case .linkMismatch: "verify: a link item's destination is not a symlink to its target"
        case .diskFull: "the disk or quota is full, or a download would leave less than --min-free"
        case .permissionDenied: "the file system refused access"
        case .ioError: "any other local I/O failure, a failed sync of written data among them"
        case .unsafePath: "a destination would be reached through a symlink, or leave the root"
        case .curl: "libcurl could not be set up on this machine"
        case .interrupted: "stopped by a signal or a cancel; resume state kept"
        case .manifest: "the manifest is invalid; nothing was fetched"
        case .usage: "the command line asks for something impossible, such as a tag filter that selects no item"
        case .locked: "another sync holds the tree, a folder above or below it, or another process writes the part file"
        case .local: "the run could not start on this machine: the root cannot be made or locked"
        case .maxDelete: "--delete would remove more files than --max-delete allows; nothing was deleted or fetched"
        case .shardMissing: "report merge has no report of a shard of the run: the merged report is incomplete"
        case .hostDown: "the item's host gave no answer for host_grace"
        case .rateLimited: "the item's host asked to be left alone longer than max_wait, or past the run's deadline"
        case .deadline: "the run reached --max-duration before the item ended"
        }
    }
}
