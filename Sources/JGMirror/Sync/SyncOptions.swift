import CSystem
import Foundation

/// How a sync runs (SPEC §2): concurrency, limits, resume and failure policy.
public struct SyncOptions: Sendable {
    /// Items in flight at once.
    public var jobs = 8
    /// Simultaneous connections to one host across all items.
    public var maxPerHost = 16
    /// Overall bandwidth cap in bytes per second.
    public var maxRate: Int64?
    /// A CA bundle to trust in addition to the system's.
    public var caCert: String?
    /// Accept `file://` sources.
    public var allowFileURLs = false
    /// Use resume state; false ignores and deletes it (`--no-resume`).
    public var resume = true
    /// Start no new item after the first failure.
    public var failFast = false
    /// An item without any checksum is an error.
    public var requireChecksums = false
    /// First retry delay in seconds; doubles per retry, with jitter.
    public var retryBaseDelay = 0.5
    /// Seconds between resume-state checkpoints.
    public var checkpointInterval = 1.0
    /// Seconds between progress events per item.
    public var progressInterval = 0.2
    /// Threads hashing files already on disk.
    public var hashThreads = ProcessInfo.processInfo.activeProcessorCount
    /// Deliver `SyncSession.events`. Off, the stream ends at once and a run nobody
    /// watches spares a hand-off to the consuming task per event.
    public var emitsEvents = true
    /// `fsync` part files before they are placed or their resume state is written,
    /// and folders after renames (SPEC §4, §6). Off (`--no-fsync`), for disks thrown
    /// away after the job: a power cut can leave recently placed files empty or
    /// partial, and resume state written without it is not trusted after a reboot.
    public var durable = true
    /// Free space a download of unknown length must leave on the destination's file
    /// system (`--min-free`); nil: 1 GiB, or 1 % of the file system when smaller.
    public var minFree: Int64?
    /// See `TransferEngine.Configuration.freeSpace`.
    var freeSpace: SpaceGuard.Probe = SpaceGuard.systemProbe
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
    /// How changes become visible to readers of the tree (`--publish`, SPEC §10b); nil:
    /// a snapshot when a set of the manifest asks for one (`publish: snapshot`), else ordered.
    public var publish: PublishMode?
    /// Snapshots kept, the one a run builds included (`--keep`): a run removes the
    /// published ones past the newest `keep - 1` before it builds its own. Nil: the
    /// largest `keep:` of the manifest's sets, else `PublishMode.defaultKeep`.
    public var keep: Int?
    /// Told each step of snapshot publishing (the CLI's crash test kills itself there).
    package var snapshotStep: (@Sendable (SnapshotTree.Step) -> Void)?
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
    /// See `TransferEngine.Configuration.flushStep`.
    var flushStep: Int64 = 64 << 20
    /// See `TransferEngine.Configuration.hashRate`.
    var hashRate = 1.5e9
    /// See `TransferEngine.Configuration.dataSync`.
    var dataSync: @Sendable (Int32) -> Int32 = { fdatasync($0) }
    /// See `TransferEngine.Configuration.writebackStep`.
    var writebackStep: Int64 = 4 << 20
    /// See `TransferEngine.Configuration.startWriteback`.
    var startWriteback: @Sendable (Int32) -> Int32 = { jg_start_writeback($0) }

    /// Seconds after which the run stops as on SIGINT, its unfinished items
    /// `interrupted` with code `deadline` (`--max-duration`).
    public var maxDuration: Double?
    /// Set by the session when `maxDuration` is given: items read it to say why they stopped.
    var runDeadline: RunDeadline?
    /// How the run judges its hosts (SPEC §5a); tests shorten the grace and probes.
    var hostSettings = HostTable.Settings()

    public init() {}

    var quickCheck: QuickCheck {
        QuickCheck(enabled: !rehash, racyWindowNs: Int64(racyWindow * 1e9))
    }

    var engineConfiguration: TransferEngine.Configuration {
        var configuration = TransferEngine.Configuration()
        configuration.jobs = max(1, jobs)
        configuration.maxPerHost = max(1, maxPerHost)
        configuration.maxRate = maxRate
        configuration.caCert = caCert
        configuration.allowFileURLs = allowFileURLs
        configuration.retryBaseDelay = retryBaseDelay
        configuration.checkpointInterval = checkpointInterval
        configuration.progressInterval = progressInterval
        configuration.failFast = failFast
        configuration.durable = durable
        configuration.flushStep = flushStep
        configuration.dataSync = dataSync
        configuration.hashRate = hashRate
        configuration.writebackStep = writebackStep
        configuration.startWriteback = startWriteback
        configuration.minFree = minFree
        configuration.freeSpace = freeSpace
        configuration.hosts = hostSettings
        return configuration
    }
}

/// How a sync makes its changes visible to readers of the tree (SPEC §10b).
public enum PublishMode: String, Sendable, CaseIterable {
    /// New and replaced files, then lists and signatures, then links, then deletions.
    case ordered
    /// The new state is built beside the published one and `ROOT/current` swapped to
    /// it (`SnapshotTree`).
    case snapshot

    /// Snapshots kept when neither `--keep` nor a set's `keep:` says.
    public static let defaultKeep = 3
}
