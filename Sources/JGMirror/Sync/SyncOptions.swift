import Foundation

/// How a sync runs (docs/commands.md#sync): concurrency, limits, resume and failure policy.
///
/// The engine's settings are not repeated here: `options.jobs`, `options.maxRate`
/// and the rest of `TransferSettings` are read and written by name in the engine's
/// configuration (`engine`), where the library and its tests also set what only
/// they tune (`options.engine.flushStep`).
@dynamicMemberLookup
public struct SyncOptions: Sendable {
    /// The engine's configuration; its defaults are this struct's.
    var engine = TransferEngine.Configuration()

    /// The engine setting at `path`: `options.jobs`, `options.durable`, …
    public subscript<Value>(dynamicMember path: WritableKeyPath<TransferSettings, Value>) -> Value {
        get { engine.settings[keyPath: path] }
        set { engine.settings[keyPath: path] = newValue }
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
    /// With `emitsEvents`, also an `itemFinished` for each item found as it should be
    /// (`ItemStatus.isSettled`). Off, a display of changes only spares a hand-off per
    /// item of a no-op run (docs/state.md#what-a-no-op-run-costs).
    public var announcesSettledItems = true
    /// Hash every present file instead of trusting the state database (`--rehash`).
    public var rehash = false
    /// Remove files under the root that no item produces, then empty folders (`--delete`).
    public var delete = false
    /// Refuse the run (exit 4, nothing deleted or fetched) when it would delete more
    /// files, or a larger share of a folder, than these allow (`--max-delete`).
    public var deleteLimits = DeleteLimits()
    /// Every file's grace period before `delete` removes it, in seconds, whatever the
    /// manifest says (`--keep-removed`; docs/deletions.md#grace-period); nil: the
    /// manifest's `keep_removed`.
    public var keepRemoved: Double?
    /// Move what `delete` removes and what a sync replaces to `DIR/<run start>/<path>`
    /// instead (`--backup-dir`); DIR must be on the root's file system.
    public var backupDir: String?
    /// How changes become visible to readers of the tree (`--publish`, docs/publishing.md); nil:
    /// a snapshot when a set at the root asks for one (`publish: snapshot`), else
    /// ordered. Sets below the root with `publish: snapshot` swap their own folders
    /// in an ordered run.
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
    /// The run's clock for what it decides by the calendar (a Release's `Valid-Until`,
    /// `keep_removed`); tests set another to decide in virtual time.
    var clock: @Sendable () -> Date = { Date() }

    /// Now, by `clock`, in whole seconds since the epoch.
    var now: Int64 { Int64(clock().timeIntervalSince1970.rounded(.down)) }

    /// Seconds after which the run stops as on SIGINT, its unfinished items
    /// `interrupted` with code `deadline` (`--max-duration`). The time counts from
    /// the first list fetched (`Manifest.expandSets`) or, with none, from the start of
    /// the session: copies of these options share it, like the host table, until the
    /// session's run ends.
    public var maxDuration: Double?
    /// When the run stops and whether it did: items and lists read it to say why
    /// they stopped. Shared by copies: the options given to `Manifest.expandSets` and
    /// then to `SyncSession` make one deadline for the run.
    let runDeadline = RunDeadline()

    public init() {}

    var quickCheck: QuickCheck {
        QuickCheck(enabled: !rehash, racyWindowNs: Int64(racyWindow * 1e9))
    }

    /// The configuration of an engine for this run: at least one job and one
    /// connection per host, and a space ledger of its own.
    var engineConfiguration: TransferEngine.Configuration {
        var configuration = engine
        configuration.jobs = max(1, engine.jobs)
        configuration.maxPerHost = max(1, engine.maxPerHost)
        configuration.spaceLedger = SpaceGuard.Ledger()
        if let maxDuration {
            let at = runDeadline.fix(after: maxDuration)
            configuration.runDeadline = (runDeadline, at)
            // The host table weighs a `Retry-After` against the deadline, on the engine's clock.
            configuration.hosts.deadline = Double(at) / 1e9
        }
        return configuration
    }
}

/// How a sync makes its changes visible to readers of the tree (docs/publishing.md).
public enum PublishMode: String, Sendable, CaseIterable {
    /// New and replaced files, then lists and signatures, then links, then deletions.
    case ordered
    /// The new state is built beside the published one and `ROOT/current` swapped to
    /// it (`SnapshotTree`).
    case snapshot

    /// Snapshots kept when neither `--keep` nor a set's `keep:` says.
    public static let defaultKeep = Rules.keep.defaultValue
}
