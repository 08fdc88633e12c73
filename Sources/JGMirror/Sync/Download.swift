import Foundation

/// A one-off accelerated download (`jgmirror get`), JGDownloadOperation's shape:
/// a URL, a destination, a connection count, a retry count, a tag, resume on/off.
public struct Download: Sendable {
    public var url: String
    /// Destination file path (absolute or relative to the current directory).
    public var destination: String
    public var connections = Rules.connections.defaultValue
    /// Retries per connection; default `connections / 2`, at least 1.
    public var retries: Int?
    /// Verify against this SHA-256 (hex) before the file is placed.
    public var sha256: String?
    public var tag: Int?
    public var mirrors: [String] = []
    public var headers: [HTTPHeader] = []
    public var minSegment = Rules.minSegment.defaultValue
    /// Stall timeout, seconds.
    public var timeout = Rules.timeout.defaultValue
    public var insecure = false
    /// The most bytes accepted for a body of unknown length (or announced for one of known length).
    public var maxSize: Int64?

    public init(url: String, destination: String) {
        self.url = url
        self.destination = destination
    }

    /// A session that runs this download; `SyncSession.resume` turns resume on or off.
    ///
    /// `destination` names a file; an existing folder, `.`, or a name ending in `/`
    /// means "this folder, the URL's file name", as `dest` does in a manifest. Nothing
    /// is ever written outside that folder.
    public func session(options: SyncOptions = SyncOptions()) throws(UsageError) -> SyncSession {
        let curl = CurlURL()
        for source in [url] + mirrors {
            if let problem = Rules.urlProblem(source, allowFileURLs: options.allowFileURLs, curl: curl) {
                throw UsageError(problem)
            }
        }
        guard !destination.isEmpty else {
            throw UsageError("the destination is empty; give -o a file name, or a folder to keep the URL's file name")
        }
        if let sha256, !Rules.isSHA256(sha256) { throw UsageError("--sha256 must be 64 hexadecimal digits") }
        if let problem = Rules.connections.problem(connections) { throw UsageError("connections \(problem)") }
        if let retries, let problem = Rules.problem(retries, in: Rules.retries) { throw UsageError("retries \(problem)") }
        for header in headers {
            if let problem = Rules.headerProblem(name: header.name) { throw UsageError(problem) }
        }
        if let maxSize, maxSize <= 0 { throw UsageError("--max-size must be more than 0 bytes") }
        if let maxSize, let problem = Rules.sizeProblem(maxSize) { throw UsageError("--max-size \(problem)") }
        if let problem = Rules.timeout.problem(timeout) { throw UsageError("--timeout \(problem)") }
        if let tag, let problem = Rules.problem(tag, in: Rules.tag) { throw UsageError("--tag \(problem)") }
        if let problem = Rules.minSegment.problem(minSegment) { throw UsageError("--min-segment \(problem)") }
        let (root, name) = try Download.split(destination, url: url)
        var own = ItemSettings()
        own.connections = connections
        own.retries = retries
        own.minSegment = minSegment
        own.timeout = timeout
        own.headers = headers
        own.redact = headers.map(\.name)
        own.insecure = insecure
        own.maxSize = maxSize
        own.refresh = .always
        let item = PlannedItem(
            id: 0, texts: ItemTexts(url: url, dest: name), extras: ItemExtras(mirrors: mirrors, tag: tag),
            sha256: sha256.map { PackedSHA256($0.lowercased()) },
            options: ItemOptions.resolve(own, defaults: ItemSettings(), root: root),
            location: SourceLocation(line: 0, column: 0), sha256Location: nil)
        let manifest = Manifest(path: "-", version: 1, root: root, defaults: ItemSettings(), checksums: [], items: [])
        var plan = Plan(manifest: manifest, options: PlanOptions())
        plan.root = root
        plan.items = [item]
        return SyncSession(plan: plan, options: options, command: .get, usesState: false)
    }

    /// The path of the file `destination` stands for: an output that would replace it
    /// is refused (docs/safety.md#output-files).
    public func destinationFile() throws(UsageError) -> String {
        let (folder, name) = try Download.split(destination, url: url)
        return (folder == "/" ? "" : folder) + "/" + name
    }

    /// The folder and the file name `destination` stands for.
    static func split(_ destination: String, url: String) throws(UsageError) -> (folder: String, name: String) {
        let absolute = URL(fileURLWithPath: destination).standardizedFileURL.path
        var isFolder: ObjCBool = false
        let folderMeant =
            destination.hasSuffix("/") || destination == "." || destination == ".."
            || (FileManager.default.fileExists(atPath: absolute, isDirectory: &isFolder) && isFolder.boolValue)
        let folder = folderMeant ? absolute : Paths.parent(of: absolute)
        let given = folderMeant ? nil : Paths.lastComponent(of: absolute)
        let name: String
        switch DestinationPath.normalize(given, url: url) {
        case .success(let normal): name = normal
        case .failure(let problem): throw UsageError(problem.message)
        }
        if let problem = Rules.pathLengthProblem(folder + "/" + name) { throw UsageError("the destination \(problem)") }
        return (folder, name)
    }
}
