/// The engine's settings a caller of the library chooses (the command line's
/// `--jobs`, `--max-per-host`, `--max-rate`, …), with their defaults. The engine's
/// configuration holds them (`TransferEngine.Configuration.settings`) and
/// `SyncOptions` hands them through by name (`options.jobs`), so each is declared once.
public struct TransferSettings: Sendable {
    /// Items in flight at once.
    public var jobs = Rules.jobs.defaultValue
    /// Simultaneous connections to one host, across items.
    public var maxPerHost = Rules.maxPerHost.defaultValue
    /// Overall bytes per second, when capped.
    public var maxRate: Int64?
    /// A CA bundle to trust in addition to the system's.
    public var caCert: String?
    /// Accept `file://` sources.
    public var allowFileURLs = false
    /// First retry delay in seconds; doubles per retry, with jitter.
    public var retryBaseDelay = Rules.retryDelay.defaultValue
    /// Seconds between resume-state checkpoints (docs/engine.md#resume-state: at most every
    /// second).
    public var checkpointInterval = 1.0
    /// Seconds between progress events per item.
    public var progressInterval = 0.2
    /// After a failed item, start no queued one (`--fail-fast`).
    public var failFast = false
    /// `fsync` part files before they are placed or their resume state is written,
    /// and folders after renames (docs/sync.md#fetching-and-placing, docs/engine.md#resume-state).
    /// Off (`--no-fsync`), for disks thrown away after the job: a power cut can leave recently
    /// placed files empty or partial, and resume state written without it is not trusted after a
    /// reboot.
    public var durable = true
    /// Free space a download of unknown length must leave on the destination's file
    /// system (`--min-free`); nil: 1 GiB, or 1 % of the file system when smaller.
    public var minFree: Int64?

    public init() {}
}
