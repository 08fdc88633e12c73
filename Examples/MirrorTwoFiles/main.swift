// Mirrors two files through the JGMirror library and prints progress from the
// event stream. Usage: MirrorTwoFiles BASE_URL [ROOT]
// (for example the demo origin: jgmirror-origin prints its BASE_URL).
import Foundation
import JGMirror

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: MirrorTwoFiles BASE_URL [ROOT]\n".utf8))
    exit(2)
}
let base = arguments[1]
let root = arguments.count > 2 ? arguments[2] : "example-mirror"

let manifest = try Manifest.parse(
    """
    version: 1
    defaults: {connections: 4}
    items:
      - url: \(base)/releases/tools.tar
        dest: tools.tar
        tag: 1
      - url: \(base)/data/a.bin
        dest: data/a.bin
        tag: 2
    """, name: "example")
var planOptions = PlanOptions()
planOptions.root = root
let session = SyncSession(plan: Plan(manifest: manifest, options: planOptions))

let printer = Task {
    for await event in session.events {
        switch event {
        case .itemStarted(let start):
            print("started  \(start.dest): \(start.length ?? -1) bytes over \(start.connections) connections")
        case .progress(let progress):
            print("progress \(progress.dest) [tag \(progress.tag ?? 0)]: \(progress.bytesPresent)/\(progress.expected ?? -1)")
        case .itemFinished(let result):
            print("finished \(result.dest): \(result.status.rawValue) sha256=\(result.sha256Actual ?? "-")")
        }
    }
}
let report = try await session.run()
await printer.value
print("exit code \(report.exitCode.rawValue)")
exit(report.exitCode.rawValue)
