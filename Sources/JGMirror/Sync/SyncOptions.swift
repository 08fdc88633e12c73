import Foundation

/// How a sync runs (SPEC §2): concurrency, limits, resume and failure policy.
///
/// What the engine takes is kept in its configuration (`engine`), defaults and all:
/// the public properties below read and write it, and the library and its tests set
/// the rest there (`options.engine.flushStep`).
public struct SyncOptions: Sendable {
    /// The engine's settings: its defaults are this struct's.
    var engine = TransferEngine.Configuration()

    /// Items in flight at once.
    public var jobs: Int {
        get { engine.jobs }
        set { engine.jobs = newValue }
    }
    /// Simultaneous connections to one host across all items.
    public var maxPerHost: Int {
        get { engine.maxPerHost }
        set { engine.maxPerHost = newValue }
    }
    /// Overall bandwidth cap in bytes per second.
    public var maxRate: Int64? {
        get { engine.maxRate }
        set { engine.maxRate = newValue }
    }
    /// A CA bundle to trust in addition to the system's.
    public var caCert: String? {
        get { engine.caCert }
        set { engine.caCert = newValue }
    }
    /// Accept `file://` sources.
    public var allowFileURLs: Bool {
        get { engine.allowFileURLs }
        set { engine.allowFileURLs = newValue }
    }
    /// Start no new item after the first failure.
    public var failFast: Bool {
        get { engine.failFast }
        set { engine.failFast = newValue }
    }
    /// First retry delay in seconds; doubles per retry, with jitter.
    public var retryBaseDelay: Double {
        get { engine.retryBaseDelay }
        set { engine.retryBaseDelay = newValue }
    }
    /// `fsync` part files before they are placed or their resume state is written,
    /// and folders after renames (SPEC §4, §6). Off (`--no-fsync`), for disks thrown
    /// away after the job: a power cut can leave recently placed files empty or
    /// partial, and resume state written without it is not trusted after a reboot.
    public var durable: Bool {
        get { engine.durable }
        set { engine.durable = newValue }
    }
    /// Free space a download of unknown length must leave on the destination's file
    /// system (`--min-free`); nil: 1 GiB, or 1 % of the file system when smaller.
    public var minFree: Int64? {
        get { engine.minFree }
        set { engine.minFree = newValue }
    }
    /// Seconds between resume-state checkpoints.
    public var checkpointInterval: Double {
        get { engine.checkpointInterval }
        set { engine.checkpointInterval = newValue }
    }
    /// Seconds between progress events per item.
    public var progressInterval: Double {
        get { engine.progressInterval }
        set { engine.progressInterval = newValue }
    }
    /// Use resume state; false ignores and deletes it (`--no-resume`).
    public var resume = true
    /// An item without any checksum is an error.
    public var requireChecksums = false
    /// Threads hashing files already on disk.
    public var hashThreads = ProcessInfo.processInfo.activeProcessorCount
    /// Deliver `SyncSession.events`. Off, the stream ends at once and a run nobody
    /// watches spares a hand-off to the consuming task per event.
    public var emitsEvents = true
    /// Hash every present file instead of trusting the state database (`--rehash`).
    public var rehash = false
    /// Remove files under the root that no item produces, then empty folders (`--delete`).
    public var delete = false
    /// Refuse the run (exit 4, nothing deleted or fetched) when it would delete more
    /// files, or a larger share of a folder, than these allow (`--max-delete`).
    public var deleteLimits = DeleteLimits()
    /// Move what `delete` removes and what a sync replaces to `DIR/<run start>/<path>`
    /// instead (`--backup-dir`); DIR must be on the root's file system.
    public var backupDir: String?
    /// Told the count of files deleted so far after each deletion (the CLI's crash
    /// test kills itself here).
    package var afterDeletion: (@Sendable (Int) -> Void)?
    /// How close to the moment a record was taken a file's timestamps make it racy
    /// (hashed rather than trusted), in seconds. Two seconds covers the coarsest
    /// common timestamps (FAT) and small clock steps; tests set 0.
    var racyWindow = 2.0
    /// Record placed files once the file system's clock has passed their timestamps,
    /// trusted at once by the next run (`RecordSettling`); tests of the racy rule turn
    /// it off to get racy records from a placement.
    var settlesPlacedRecords = true
    /// How long a database write waits for another process's write, in seconds.
    var stateBusyTimeout = 5.0
    /// Runs on the thread that opens the state database, before it does (tests).
    var beforeStateOpens: (@Sendable () -> Void)?
    /// Runs between placing a batch and recording it; false skips the recording, as a
    /// process killed at that point would (tests; the CLI's crash test kills itself here).
    package var beforeRecording: (@Sendable () -> Bool)?
    /// Told the destination of every present file that is hashed (tests).
    var hashedFile: (@Sendable (String) -> Void)?
    /// Present files whose hashing may be queued or running at once; nil: four per
    /// hashing thread (tests set it).
    var hashWindow: Int?
    /// Told each time the walk of the plan waits for room among the files being hashed (tests).
    var hashWindowFull: (@Sendable () -> Void)?
    /// Records of files placed, hashed or answered `304`, written in one transaction
    /// while a run goes on: enough that a transaction costs little per record, few
    /// enough that a run that hashes 100,000 files does not hold a record (and its
    /// strings) for each until the end, and that the last batch, which the run waits
    /// for, is short (2000 small files: 1024 left the run 4 ms of writing at its end).
    var learnedBatch = 256
    /// Told the size of each transaction of records (tests).
    var savedLearned: (@Sendable (Int) -> Void)?

    /// Seconds after which the run stops as on SIGINT, its unfinished items
    /// `interrupted` with code `deadline` (`--max-duration`).
    public var maxDuration: Double?
    /// Set by the session when `maxDuration` is given: items read it to say why they stopped.
    var runDeadline: RunDeadline?

    public init() {}

    var quickCheck: QuickCheck {
        QuickCheck(enabled: !rehash, racyWindowNs: Int64(racyWindow * 1e9))
    }

    /// The configuration of an engine for this run: at least one job and one
    /// connection per host, and a space ledger of its own.
    var engineConfiguration: TransferEngine.Configuration {
        var configuration = engine
        configuration.jobs = max(1, jobs)
        configuration.maxPerHost = max(1, maxPerHost)
        configuration.spaceLedger = SpaceGuard.Ledger()
        return configuration
    }
}
