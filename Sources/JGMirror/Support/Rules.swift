import Foundation

/// The one place for each rule a value must follow, whoever supplies it: the manifest
/// parser, the command line and the one-off `Download` all ask here, so a limit or a
/// message never differs between them. Each check returns what is wrong, phrased
/// without naming the key or option (the caller adds that), or nil.
public enum Rules {
    // MARK: The option table: defaults, bounds and help (see `Setting`, `table`)

    /// Connections per item (docs/engine.md#connections-and-ranges).
    public static let connections = Setting(default: 6, range: 1...64).described(
        key: "connections", places: OptionRow.Place.itemSettings, flags: ["--connections", "get -c"],
        help: "TCP connections the item's file is fetched over", example: "8")
    /// Retries per connection; the default depends on the connections (`defaultRetries`).
    public static let retries = 0...100
    /// Items in flight at once (`--jobs`).
    /// As many as a host takes connections (`maxPerHost`): single-request items, each
    /// a round trip, can fill that budget on a high-latency link, where 8 left half of
    /// it idle (docs/engine.md#politeness).
    public static let jobs = Setting(default: 16, range: 1...4096).described(
        key: nil, flags: ["--jobs"], help: "Items in flight at once", example: "32")
    /// Connections to one host, across items (`--max-per-host`).
    public static let maxPerHost = Setting(default: 16, range: 1...1024).described(
        key: nil, flags: ["--max-per-host"], help: "Connections to one host at once, across items", example: "4")
    /// Published snapshots kept (`--keep`, a set's `keep:`); the one a run builds is not
    /// counted.
    public static let keep = Setting(default: 3, range: 2...1000).described(
        key: "keep", places: [.set], flags: ["--keep"],
        help: "Published snapshots kept under snapshot publishing (the one a run builds is not counted)", example: "5")
    /// The largest size a manifest or the command line may give (`size`, `max_size`,
    /// `min_segment`, `--max-size`, `--min-free`, `--min-segment`; see `sizeProblem`):
    /// 1 EiB, past any file a file system holds, and far enough below `Int64.max` that
    /// arithmetic on byte offsets never overflows. (A server's lengths are read as at
    /// most 18 digits, below it too.)
    public static let maximumSize: Int64 = 1 << 60
    /// The smallest range an item is split into (`min_segment`, `get --min-segment`):
    /// 1 MiB unless given, never under 16 KiB.
    public static let minSegment = Setting(bytes: 1 << 20, range: 16 << 10...maximumSize).described(
        key: "min_segment", places: OptionRow.Place.itemSettings, flags: ["get --min-segment"],
        help: "The smallest region a file is split into", example: "4MiB")
    /// The stall timeout (`timeout`, `get --timeout`), seconds: 30 unless given, from
    /// 100 ms (less is shorter than a round trip) to a day (a connection silent that
    /// long is dead). The bound also keeps its conversion to libcurl's whole
    /// milliseconds far from overflowing (`timeout: 2562047788016h` once stopped a run
    /// with SIGILL).
    public static let timeout = Setting(seconds: 30, range: 0.1...86_400).described(
        key: "timeout", places: OptionRow.Place.itemSettings, flags: ["get --timeout"],
        help: "No byte for this long fails a connection's request; also the window of min_rate", example: "1m")
    /// How long a connection may take to open (`connect_timeout`), seconds: 10 unless
    /// given, from 100 ms to an hour.
    public static let connectTimeout = Setting(seconds: 10, range: 0.1...3600).described(
        key: "connect_timeout", places: OptionRow.Place.hostSettings, help: "How long the TCP connect and TLS handshake may take",
        example: "2s")
    /// Bytes per second under which a request, for its `timeout`, is stalled
    /// (`min_rate`): a server that sends a byte now and then is cut, not waited on.
    public static let minRate = Setting(bytesPerSecond: 1024, range: 1...maximumSize).described(
        key: "min_rate", places: OptionRow.Place.hostSettings,
        help: "A request slower than this for timeout is stalled and moves to a mirror", example: "64KiB")
    /// Seconds a host may go without an answer before it is down (`host_grace`): 30
    /// unless given (longer than a web server takes to restart), from 0 (down at the
    /// first probe that fails) to a day.
    public static let hostGrace = Setting(seconds: 30, range: 0...86_400).described(
        key: "host_grace", places: OptionRow.Place.hostSettings,
        help: "How long a host may give no answer before it is down and its items fail (host_down)", example: "2m")
    /// The longest wait a host may ask for (`max_wait`), seconds: 5 minutes unless
    /// given, from 0 (never wait) to a day.
    public static let maxWait = Setting(seconds: 300, range: 0...86_400).described(
        key: "max_wait", places: OptionRow.Place.hostSettings,
        help: "The longest Retry-After the run waits for; a longer one fails the host's items (rate_limited)",
        example: "15m")
    /// The first retry delay (`--retry-delay`), seconds: 500 ms unless given, up to an
    /// hour; it doubles per retry, with jitter.
    public static let retryDelay = Setting(seconds: 0.5, range: 0...3600).described(
        key: nil, flags: ["--retry-delay"], help: "The first retry's delay, doubled per retry, with jitter",
        example: "2s")
    /// Free space a download must leave on its file system (`--min-free`): 1 GiB, or
    /// 1 % of the file system when that is smaller (`SpaceGuard.defaultReserve`).
    public static let minFree = Setting(bytes: 1 << 30, range: 0...maximumSize).described(
        key: nil, flags: ["--min-free"], help: "Free space a download must leave on the destination's file system",
        example: "10GiB", defaultText: "1GiB, or 1% of the file system if smaller")
    /// How long a file that left every list stays before `--delete` removes it
    /// (`keep_removed`, `--keep-removed`; docs/deletions.md#grace-period): none unless
    /// given, a day for apt sets (`AptCatalog`), at most a year.
    public static let keepRemoved = Setting(seconds: 0, range: 0...31_536_000).described(
        key: "keep_removed", places: [.defaults, .set], flags: ["--keep-removed"],
        help: "How long a file that left every list stays before --delete removes it; the set's, else defaults', else the kind's",
        example: "1d", defaultText: "0s (1d for apt sets)")
    /// The most files one `sync --delete` removes (`--max-delete N`; `DeleteLimits`).
    public static let maxDeleteCount = Setting(default: 1000, range: 0...Int.max).described(
        key: nil, flags: ["--max-delete N"], help: "The most files one sync --delete removes; 0 forbids deleting",
        example: "200", bounds: "0 or more")
    /// The largest share, in percent, of the files under the root or a set's folder
    /// that one `sync --delete` removes (`--max-delete P%`; `DeleteLimits`).
    public static let maxDeleteShare = Setting(default: 50, range: 0...100).described(
        key: nil, flags: ["--max-delete P%"],
        help: "The largest share of the files under the root or a set's folder one sync --delete removes",
        example: "10%", defaultText: "50%", bounds: "0% to 100%")
    /// Retries per connection when neither the manifest nor the command line gives a
    /// count: half the connections, at least one.
    public static func defaultRetries(connections: Int) -> Int { max(1, connections / 2) }

    // MARK: Bounds without a default

    /// The longest run (`--max-duration`), seconds: from a second to a year.
    public static let maxDuration: ClosedRange<Double> = 1...31_536_000
    /// A numeric `tag` (`tag:`, `get --tag`): what every JSON reader holds exactly,
    /// ±(2^53 − 1), as reports carry it as a JSON number.
    public static let tag: ClosedRange<Int> = -(1 << 53 - 1)...(1 << 53 - 1)
    /// The shards of a run (`--shard I/N`, `--shard-count`, a report's shard): at most
    /// 100,000, as many as a Kubernetes Indexed Job may have and far more than a
    /// Slurm array (1,001 by default). A report claiming more is not a report.
    public static let shardCount: ClosedRange<Int> = 1...100_000
    /// Bytes per second of `--max-rate`: at least one, at most `maximumSize`.
    public static let rate: ClosedRange<Int64> = 1...maximumSize
    /// The longest URL accepted. libcurl refuses more than 8 MB; servers commonly refuse
    /// more than 8 KiB; nothing real comes near this.
    public static let maxURLLength = 64 * 1024
    /// The longest name of one path component in bytes (Linux `NAME_MAX`).
    public static let maxNameLength = Int(NAME_MAX)
    /// The longest absolute path in bytes, including the `.jgpart` suffix jgmirror adds
    /// (Linux `PATH_MAX`, counting its terminating NUL).
    public static let maxPathLength = Int(PATH_MAX) - 1

    /// What is wrong with a size past `maximumSize`, whichever key or option gives it.
    public static func sizeProblem(_ value: Int64) -> String? {
        value <= maximumSize ? nil : "must be at most \(formatSize(maximumSize))"
    }

    /// The longest name jgmirror makes next to a destination: `DEST.jgd.tmp`.
    public static let longestWorkingSuffix = ".jgd.tmp"

    /// What is wrong with a destination whose absolute path is `path`: with the
    /// longest working suffix it must fit in Linux's `PATH_MAX`.
    public static func pathLengthProblem(_ path: String) -> String? {
        let longest = path.utf8.count + longestWorkingSuffix.utf8.count
        guard longest > maxPathLength else { return nil }
        return
            "makes a path of \(longest) bytes (with the \(longestWorkingSuffix) jgmirror adds); Linux takes at most \(maxPathLength)"
    }

    /// What is wrong with a duration of `seconds` for a setting that takes `range`.
    public static func durationProblem(_ seconds: Double, in range: ClosedRange<Double>) -> String? {
        range.contains(seconds)
            ? nil : "must be from \(formatDuration(range.lowerBound)) to \(formatDuration(range.upperBound))"
    }

    /// `bytes` in the largest binary unit that writes it whole: `16KiB`, `1MiB`, `1EiB`.
    static func formatSize(_ bytes: Int64) -> String {
        for (unit, shift) in [("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)]
        where bytes >= Int64(1) << shift && bytes % (Int64(1) << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return String(bytes)
    }

    /// `seconds` in the largest unit the manifest takes that writes it whole: `100ms`,
    /// `30s`, `24h`, `365d` (days only past one, where hours read better).
    static func formatDuration(_ seconds: Double) -> String {
        if seconds > 86_400, seconds.remainder(dividingBy: 86_400) == 0 { return "\(Int(seconds / 86_400))d" }
        for (unit, factor) in [("h", 3600.0), ("m", 60), ("s", 1)]
        where seconds >= factor && seconds.remainder(dividingBy: factor) == 0 {
            return "\(Int(seconds / factor))\(unit)"
        }
        return seconds == 0 ? "0s" : "\(Int((seconds * 1000).rounded()))ms"
    }

    /// What is wrong with a whole number for a setting that takes `range`.
    public static func problem(_ value: Int, in range: ClosedRange<Int>) -> String? {
        range.contains(value) ? nil : "must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value)"
    }

    /// Whether `text` is 64 hexadecimal digits (either case).
    public static func isSHA256(_ text: String) -> Bool { hexCase(text) != nil }

    /// Whether `text`, `count` hexadecimal digits (64 for a SHA-256, 128 for a SHA-512),
    /// has an upper-case one; nil when it is not `count` hexadecimal digits. One pass
    /// over the bytes (once per manifest item).
    static func hexCase(_ text: String, count: Int = 64) -> Bool? {
        var text = text
        return text.withUTF8 { digits -> Bool? in
            guard digits.count == count else { return nil }
            var upper = false
            for digit in digits {
                switch digit {
                case 0x30...0x39, 0x61...0x66: continue
                case 0x41...0x46: upper = true
                default: return nil
                }
            }
            return upper
        }
    }

    /// What is wrong with a source URL: scheme, host, white space, length, and
    /// whatever else libcurl's URL parser refuses.
    public static func urlProblem(_ url: String, allowFileURLs: Bool) -> String? {
        urlProblem(url, allowFileURLs: allowFileURLs, curl: CurlURL())
    }

    /// `urlProblem`, parsing with `curl`'s handle (a manifest parser keeps one for all
    /// of its URLs).
    static func urlProblem(_ url: String, allowFileURLs: Bool, curl: CurlURL) -> String? {
        if url.utf8.count > maxURLLength {
            return "URL is \(url.utf8.count) bytes long; jgmirror accepts at most \(maxURLLength)"
        }
        guard let authority = URLAuthority(url) else {
            return "'\(Redactor.redactURLAndQuery(url))' is not an absolute URL (http://, https://)"
        }
        let scheme = authority.scheme.lowercased()
        switch scheme {
        case "http", "https":
            guard authority.hasHost(in: url) else { return "URL '\(Redactor.redactURLAndQuery(url))' has no host" }
        case "file":
            guard allowFileURLs else { return "file:// URLs are refused unless --allow-file-urls is given" }
        default:
            return "unsupported URL scheme '\(scheme)'; use http or https"
        }
        var url = url
        if url.withUTF8({ $0.contains { $0 <= 0x20 || $0 == 0x7f } }) {
            return "URL contains white space or a control character; percent-encode it (%20)"
        }
        return curl.problem(url)
    }

    /// Request headers jgmirror sets itself, and why a user-given one would break a
    /// download. Names compare case-insensitively.
    static let controlledHeaders: [String: String] = [
        "accept-encoding":
            "jgmirror stores files byte for byte; with Accept-Encoding a server may send compressed pieces "
            + "that are pasted into the file as if they were its bytes",
        "range": "jgmirror asks for byte ranges itself",
        "if-range": "jgmirror sends If-Range itself when it resumes",
        "if-none-match": "jgmirror sends conditional requests itself",
        "if-modified-since": "jgmirror sends conditional requests itself",
        "content-length": "jgmirror sends no request body",
        "transfer-encoding": "jgmirror sends no request body",
        "host": "the host comes from the URL (and changes with redirects and mirrors)",
        "connection": "jgmirror manages its connections itself",
        "te": "jgmirror manages its connections itself",
    ]

    /// What is wrong with sending a header of this name, or nil when it may be sent.
    public static func headerProblem(name: String) -> String? {
        guard HTTPHeader.isValidName(name) else { return "'\(name)' is not a valid header name" }
        guard let reason = controlledHeaders[name.lowercased()] else { return nil }
        return "header '\(name)' cannot be set: \(reason)"
    }

    /// `text` cut to its first `limit` characters with an ellipsis, for messages about
    /// values that may be megabytes long.
    public static func abbreviated(_ text: String, limit: Int = 80) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "… (\(text.utf8.count) bytes)"
    }

    /// Control characters (and invalid UTF-8 already replaced) made visible, so a name
    /// taken from a URL cannot write raw bytes to a terminal: `a\u{0}b` → `a\x00b`.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || ($0.value >= 0x7f && $0.value < 0xa0) }) else {
            return text
        }
        var output = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (scalar.value >= 0x7f && scalar.value < 0xa0) {
                output += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            } else {
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}

extension Character {
    /// 0–9, a–f or A–F: a hex digit as checksums are written (`isHexDigit` also takes
    /// the full-width forms).
    var isASCIIHexDigit: Bool { isASCII && isHexDigit }
}
