// Syncs a manifest whose files come from a signed-or-not SHA256SUMS list (`sets:`)
// through the JGMirror library, in one call: the session reads the list on the run's
// own engine, then fetches what it names. Usage: SyncWithSets BASE_URL [ROOT]
// (for example the demo origin: jgmirror-origin prints its BASE_URL, and serves
// BASE_URL/data/SHA256SUMS).
import Foundation
import JGMirror

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: SyncWithSets BASE_URL [ROOT]\n".utf8))
    exit(2)
}
let base = arguments[1]
let root = arguments.count > 2 ? arguments[2] : "example-set"

let manifest = try Manifest.parse(
    """
    version: 1
    sets:
      - sums: \(base)/data/SHA256SUMS
        dest: data/
    items:
      - url: \(base)/releases/notes.txt
        dest: notes.txt
    """, name: "example")
var planOptions = PlanOptions()
planOptions.root = root
// No `Manifest.expandSets` first: the run reads the set's list itself.
let report = try await SyncSession(plan: Plan(manifest: manifest, options: planOptions)).run()
for item in report.items {
    print("\(item.status.rawValue) \(item.dest)")
}
print("exit code \(report.exitCode.rawValue)")
exit(report.exitCode.rawValue)
