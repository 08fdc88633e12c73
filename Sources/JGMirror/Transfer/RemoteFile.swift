/// What one item knows of the remote file and where it lives: the validators of the
/// response that revealed it (and which source sent them: `If-Range` goes only
/// there), each source's URL once redirects resolved it, and whether the regions were
/// cut from the manifest's size before any response (`presumed`).
struct RemoteFile {
    private let sources: [String]
    private(set) var validators = Validators()
    private var validatorSource = 0
    /// Redirect-resolved URLs per source, so later ranges skip the redirects.
    private var effectiveURLs: [Int: String] = [:]
    /// The regions were cut from the manifest's size: the first `206` confirms the
    /// length and gives the validators, a `200` takes the file as one stream, a
    /// redirect starts over with one request.
    private(set) var presumed = false

    init(sources: [String]) { self.sources = sources }

    /// The regions are cut from the manifest's size, before any response.
    mutating func presume() { presumed = true }

    /// Where a request to `source` goes.
    func url(of source: Int) -> String { effectiveURLs[source] ?? sources[source] }

    /// Whether `source` sent the validators a request must match.
    func gaveValidators(_ source: Int) -> Bool { source == validatorSource }

    /// The `If-Range` value for a request to `source`.
    func ifRange(for source: Int) -> String? { gaveValidators(source) ? validators.ifRange : nil }

    /// Notes where `source` led, the first time a response came from it.
    mutating func remember(_ effectiveURL: String?, of source: Int) {
        if effectiveURLs[source] == nil, let effectiveURL { effectiveURLs[source] = effectiveURL }
    }

    /// A response revealed the file: its validators come from `source`.
    mutating func revealed(by validators: Validators, from source: Int) {
        self.validators = validators
        validatorSource = source
        presumed = false
    }

    /// Validators known without a response: saved by an earlier run, or sent with a `304`.
    mutating func adopt(_ validators: Validators) {
        if validators != Validators() { self.validators = validators }
    }

    /// The item starts over from zero: nothing learned stands.
    mutating func forget() { self = RemoteFile(sources: sources) }
}
