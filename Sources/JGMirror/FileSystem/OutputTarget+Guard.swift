import Foundation

extension OutputTarget {
    /// What no output may replace (docs/safety.md#output-files): a report renamed over
    /// a mirrored file, a file of a published snapshot, the state database or the
    /// manifest destroys what the run is there to keep.
    public enum Guarded: Sendable, Equatable {
        /// A folder and everything below it, however reached: the mirror's root, which
        /// holds the published snapshots and the state folder too.
        case tree(String)
        /// One file, however reached; `what` names it in the refusal ("the manifest").
        case file(String, what: String)
    }

    /// Refuses an output that would replace a guarded file or a file inside a guarded
    /// tree, wherever the links on its way lead. A device, a FIFO and stdout are
    /// written in place and replace nothing, so they are not refused.
    public func refuse(_ guarded: [Guarded]) throws(Refusal) {
        guard case .replaced(let path) = kind else { return }
        let landing = Self.landing(path)
        for entry in guarded {
            switch entry {
            case .tree(let folder):
                let top = Self.landing(folder)
                guard landing == top || landing.hasPrefix(top == "/" ? "/" : top + "/") else { continue }
                throw Refusal(
                    message:
                        "\(option) \(Rules.printable(given)): inside the mirror's root \(Rules.printable(folder)), whose files, snapshots and state no output may replace; give a path outside it"
                )
            case .file(let file, let what):
                guard landing == Self.landing(file) else { continue }
                throw Refusal(
                    message: "\(option) \(Rules.printable(given)): \(what), which no output may replace; give a path of its own")
            }
        }
    }

    /// Where a write to `path` lands: the path made absolute, with every link and `..`
    /// of the part that exists resolved, and the part not made yet (a first sync's
    /// root, a report's new name) appended as written.
    static func landing(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var head = absolute
        var missing: [String] = []
        var resolved = resolvedPath(head)
        while resolved == nil, head != "/", !head.isEmpty {
            missing.append(Paths.lastComponent(of: head))
            head = Paths.parent(of: head)
            resolved = resolvedPath(head)
        }
        let top = resolved ?? "/"
        let joined = ([top == "/" ? "" : top] + missing.reversed()).joined(separator: "/")
        // Folds `.` and `..` of the missing part, which no link can redirect.
        return URL(fileURLWithPath: joined.isEmpty ? "/" : joined).standardizedFileURL.path
    }
}
