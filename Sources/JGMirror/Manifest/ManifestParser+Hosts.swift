/// `hosts:` (docs/manifest.md#host-keys): the host options of `defaults` given for one origin each.
///
/// ```yaml
/// hosts:
///   https://mirror.example.net:        # the default port (443) may be left out
///     host_grace: 2m
///   http://10.0.0.5:8080:
///     connect_timeout: 2s
/// ```
///
/// A key is an origin, `scheme://host[:port]`, http or https, with no path (a lone
/// `/` is allowed), query, fragment or credentials; it is spelled as the run's host
/// table spells it (`Origin.key`: lower case, the scheme's default port
/// filled in), so `https://Mirror.example.net` and `https://mirror.example.net:443`
/// are one origin, and naming it twice is an error.
extension ManifestParser {
    mutating func parseHosts() throws(ManifestError) -> [String: HostOptions] {
        _ = try expectMapping("hosts")
        var origins: [String: HostOptions] = [:]
        // Where each origin was first given, for the error that names it twice.
        var given: [String: SourceLocation] = [:]
        while true {
            let (event, location) = try next()
            if event == .mappingEnd {
                hostsGiven = given
                return origins
            }
            guard case .scalar(let text, _) = event else {
                throw error(location, "keys in hosts must be origins such as https://mirror.example.net, found \(event.noun)")
            }
            let written = try expandEnvironment(text, at: location)
            let origin = try origin(of: written, at: location)
            if let first = given[origin] {
                throw error(location, "origin \(origin) appears twice in hosts (first at line \(first.line))")
            }
            given[origin] = location
            origins[origin] = try parseOriginOptions(of: origin)
        }
    }

    /// The options under one origin of `hosts:`.
    private mutating func parseOriginOptions(of origin: String) throws(ManifestError) -> HostOptions {
        _ = try expectMapping(origin)
        var options = HostOptions()
        var seen = SeenKeys(HostOptions.keys)
        while let (key, _) = try nextKey(in: "hosts '\(origin)'", seen: &seen) {
            // `nextKey` lets through only the host options' keys.
            _ = try parseHostOption(key, into: &options)
        }
        return options
    }

    /// `text`, a key of `hosts:`, as the host table spells its origin; an error when it
    /// is not an http or https origin alone.
    private func origin(of text: String, at location: SourceLocation) throws(ManifestError) -> String {
        let shape = "a key of hosts must be an origin such as https://mirror.example.net or http://10.0.0.5:8080"
        guard let authority = URLAuthority(text), ["http", "https"].contains(authority.scheme.lowercased()) else {
            throw error(location, "\(shape), not '\(Rules.printable(text))'")
        }
        try checkURL(text, at: location)
        guard authority.at == nil else {
            throw error(location, "\(shape), without credentials: '\(Redactor.redactURL(text))'")
        }
        let rest = text[authority.end...]
        guard rest.isEmpty || rest == "/" else {
            throw error(location, "\(shape), without path, query or fragment: '\(Rules.printable(text))'")
        }
        return Origin.key(text)
    }

    /// A warning for each origin of `hosts:` that no item, mirror, set or list names: a
    /// slip in one (`:8443` for `:443`, `http` for `https`) would otherwise leave that
    /// host on the defaults without a word.
    func unusedHostsWarnings(_ manifest: Manifest) -> [ManifestError] {
        guard !hostsGiven.isEmpty else { return [] }
        var unused = hostsGiven
        func uses(_ url: String) { unused[Origin.key(url)] = nil }
        // Through the compact chunks, not `items` (an array of every item), and only
        // until every origin is seen: usually within the first items.
        for item in manifest.itemChunks {
            guard !unused.isEmpty else { return [] }
            uses(item.url)
            item.mirrors.forEach(uses)
        }
        for set in manifest.sets {
            set.catalog.urls.forEach(uses)
        }
        for list in manifest.checksums {
            uses(list.url)
            list.signature.map { uses($0.url) }
        }
        return unused.sorted { $0.value.line < $1.value.line }.map { origin, location in
            error(
                location,
                "no item, mirror or list of this manifest is on \(origin); its options apply only where a redirect leads there")
        }
    }
}
