import Foundation

/// A one-off accelerated download (`jgmirror get`), JGDownloadOperation's shape:
/// a URL, a destination, a connection count, a retry count, a tag, resume on/off.
public struct Download: Sendable {
    public var url: String
    /// Destination file path (absolute or relative to the current directory).
    public var destination: String
    public var connections = 6
    /// Retries per connection; default `connections / 2`, at least 1.
    public var retries: Int?
    /// Verify against this SHA-256 (hex) before the file is placed.
    public var sha256: String?
    public var tag: Int?
    public var mirrors: [String] = []
    public var headers: [HTTPHeader] = []
    public var minSegment: Int64 = 1 << 20
    /// Stall timeout, seconds.
    public var timeout: Double = 30
    public var insecure = false

    public init(url: String, destination: String) {
        self.url = url
        self.destination = destination
    }

    /// A session that runs this download; `SyncOptions.resume` turns resume on or off.
    public func session(options: SyncOptions = SyncOptions()) throws(UsageError) -> SyncSession {
        let absolute = URL(fileURLWithPath: destination).standardizedFileURL.path
        let root = Paths.parent(of: absolute)
        let name = Paths.lastComponent(of: absolute)
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://")
            || (options.allowFileURLs && url.lowercased().hasPrefix("file://"))
        else {
            throw UsageError("'\(Redactor.redactURL(url))' is not an http or https URL")
        }
        if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
            throw UsageError("--sha256 must be 64 hexadecimal digits")
        }
        guard (1...64).contains(connections) else { throw UsageError("connections must be from 1 to 64") }
        let item = PlannedItem(
            id: 0, url: url, mirrors: mirrors, dest: name, root: root, sha256: sha256?.lowercased(), size: nil,
            connections: connections, retries: retries ?? max(1, connections / 2), minSegment: minSegment, timeout: timeout,
            headers: headers, redact: headers.map(\.name), tags: [], tag: tag, insecure: insecure,
            location: SourceLocation(line: 0, column: 0), sha256Location: nil)
        let manifest = Manifest(path: "-", version: 1, root: root, defaults: ItemSettings(), checksums: [], items: [])
        var plan = Plan(manifest: manifest, options: PlanOptions())
        plan.root = root
        plan.items = [item]
        return SyncSession(plan: plan, options: options, command: "get", takesLock: false, refetchUnverified: true)
    }
}
