/// Which files of a Release a selection mirrors, by their path (the list is on
/// `AptSelection`).
extension AptSelection {
    /// The kind of the index at `path` (relative to the suite's folder) when this
    /// selection mirrors it; nil when it does not.
    func kind(of path: String, architectures: [String]) -> AptIndexPlan.Kind? {
        if !path.contains("/") { return contentsKind(path, architectures: architectures) }
        for component in components where path.hasPrefix(component + "/") {
            let rest = String(path.dropFirst(component.count + 1))
            if let kind = componentKind(rest, architectures: architectures) { return kind }
        }
        return nil
    }

    /// `rest` is a path inside one wanted component.
    private func componentKind(_ rest: String, architectures: [String]) -> AptIndexPlan.Kind? {
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        // A file in the component's own folder (Contents-ARCH), or one folder down: no deeper.
        guard parts.count == 2 else { return contentsKind(rest, architectures: architectures) }
        let (folder, name) = (parts[0], parts[1])
        guard !name.contains("/") else { return nil }
        let base = Self.split(name).base
        switch folder {
        case "source":
            guard sources else { return nil }
            return base == "Sources" ? .sources : name == "Release" ? .componentRelease : nil
        case "i18n":
            return name == "Index" || base.hasPrefix("Translation-") ? .translation : nil
        case "dep11":
            if name.hasPrefix("icons-") { return .appStream }
            let perArchitecture = architectures.flatMap { ["Components-\($0).yml", "CID-Index-\($0).json"] }
            return perArchitecture.contains(base) ? .appStream : nil
        case "cnf":
            return architectures.contains(where: { base == "Commands-\($0)" }) ? .commands : nil
        default:
            guard folder.hasPrefix("binary-"), architectures.contains(String(folder.dropFirst(7))) else { return nil }
            return base == "Packages" ? .packages : name == "Release" ? .componentRelease : nil
        }
    }

    /// `Contents-ARCH`, `Contents-udeb-ARCH`, and with sources `Contents-source`, in any form.
    private func contentsKind(_ name: String, architectures: [String]) -> AptIndexPlan.Kind? {
        let base = Self.split(name).base
        guard base.hasPrefix("Contents-") else { return nil }
        var suffix = base.dropFirst("Contents-".count)
        if suffix == "source" { return sources ? .contents : nil }
        if suffix.hasPrefix("udeb-") { suffix = suffix.dropFirst(5) }
        return architectures.contains(String(suffix)) ? .contents : nil
    }
}
