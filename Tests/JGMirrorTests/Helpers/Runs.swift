import Foundation

@testable import JGMirror

/// Options that keep retries quick in tests.
func testOptions() -> SyncOptions {
    var options = SyncOptions()
    options.retryBaseDelay = 0.01
    options.checkpointInterval = 0.1
    return options
}

/// Test options with a host grace of `grace` seconds and short probe delays.
func hostTestOptions(grace: Double) -> SyncOptions {
    var options = testOptions()
    options.engine.hosts = HostTable.Settings(grace: grace, probeBaseDelay: 0.05, probeMaxDelay: 0.2)
    return options
}

/// Parses `yaml` as a manifest stored in `directory` and syncs it into `directory/mirror`.
func sync(_ yaml: String, in directory: String, options: SyncOptions = testOptions()) async throws -> RunReport {
    let path = write(yaml, to: "manifest.yaml", in: directory)
    let manifest = try Manifest.load(path: path)
    var planOptions = PlanOptions()
    planOptions.root = directory + "/mirror"
    return try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options).run()
}

/// Writes `yaml` to `dir/m.yaml`, loads it and syncs it into `dir/mirror`: the run reads
/// its sets' lists, as a library user's one call does.
func syncSets(_ yaml: String, in dir: String, options: SyncOptions = testOptions()) async throws -> RunReport {
    let manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
    var planOptions = PlanOptions()
    planOptions.root = dir + "/mirror"
    return try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options).run()
}

/// The plan of the manifest `yaml` (named `m.yaml` in its errors), mirrored into `root`.
func plan(_ yaml: String, root: String) throws -> Plan {
    var options = PlanOptions()
    options.root = root
    return Plan(manifest: try Manifest.parse(yaml, name: "m.yaml"), options: options)
}

/// Runs `session`, collecting its events alongside: the report and the events in the
/// order they came.
func runCollecting(_ session: SyncSession) async throws -> (RunReport, [SyncEvent]) {
    let collector = Task { () -> [SyncEvent] in
        var events: [SyncEvent] = []
        for await event in session.events { events.append(event) }
        return events
    }
    let report = try await session.run()
    return (report, await collector.value)
}
