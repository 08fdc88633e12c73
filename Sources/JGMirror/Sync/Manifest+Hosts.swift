extension Manifest {
    /// One line per origin of `hosts:`, in origin order: the host options a run uses
    /// for it (its own, else `defaults`', else the built-in ones), as `plan` shows them.
    public var hostLines: [String] {
        var configuration = TransferEngine.Configuration()
        configuration.apply(hosts, origins: originHosts)
        let table = configuration.hosts
        return originHosts.keys.sorted().map { origin in
            "\(origin): connect_timeout \(Rules.formatDuration(configuration.connectTimeout(for: origin))), "
                + "min_rate \(Units.formatBytes(configuration.minRate(for: origin)))/s, "
                + "host_grace \(Rules.formatDuration(table.grace(for: origin))), "
                + "max_wait \(Rules.formatDuration(table.maxWait(for: origin)))"
        }
    }
}
