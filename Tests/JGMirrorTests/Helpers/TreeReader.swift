import Foundation

@testable import JGMirror

/// Reads a release folder in a loop on a thread of its own: its `SHA256SUMS`, then
/// each file it names, hashed. A list that is the same before and after its files
/// were checked and names a file that is missing or has other bytes is a violation.
final class TreeReader: Sendable {
    let folder: String
    private let state = Locked<State>(State())
    private let finished = DispatchSemaphore(value: 0)

    private struct State {
        var violations: [String] = []
        var othersDone = false
        var stop = false
        var released = false
    }

    init(folder: String) { self.folder = folder }

    /// The sync has given every item but the held one its result.
    func othersDone() { state.withLock { $0.othersDone = true } }

    /// Starts the loop; `release` is called once, after a whole pass that began once
    /// `othersDone` was called.
    func start(release: @escaping @Sendable () -> Void) {
        Thread {
            while true {
                let (othersDone, stop) = self.state.withLock { ($0.othersDone, $0.stop) }
                self.pass()
                if othersDone,
                    self.state.withLock({ state -> Bool in
                        defer { state.released = true }
                        return !state.released
                    })
                {
                    release()
                }
                if stop { break }
            }
            self.finished.signal()
        }.start()
    }

    /// Ends the loop after one more pass; returns what it found.
    func stop() -> [String] {
        state.withLock { $0.stop = true }
        finished.wait()
        return state.value.violations
    }

    private func pass() {
        guard let list = FileManager.default.contents(atPath: folder + "/SHA256SUMS") else { return }
        var found: [String] = []
        for line in String(decoding: list, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: " *"))
            guard let bytes = FileManager.default.contents(atPath: folder + "/" + name) else {
                found.append("\(name) is listed but missing")
                continue
            }
            if sha([UInt8](bytes)) != parts[0] { found.append("\(name) does not have the listed hash") }
        }
        // Checked against a list that was current all along.
        guard !found.isEmpty, FileManager.default.contents(atPath: folder + "/SHA256SUMS") == list else { return }
        state.withLock { $0.violations += found }
    }
}
