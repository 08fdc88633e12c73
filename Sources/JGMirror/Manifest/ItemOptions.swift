/// An item's options, resolved once (docs/manifest.md#item-keys): the command line's
/// over the item's (or its set's) over `defaults:` over the option table's defaults
/// (`Rules`). Immutable, shared by reference among the items that resolve to the same
/// ones (most items of a large manifest take all of theirs from `defaults:`), and
/// carried by reference from the plan to the engine (`TransferRequest.options`).
///
/// A new item option is a field of `ItemSettings` (what the manifest says), a line
/// of the parser, a field here with its line in `resolve`, and the code that reads it.
@dynamicMemberLookup
public final class ItemOptions: Sendable {
    /// The resolved values.
    public struct Values: Sendable, Equatable {
        /// Absolute destination root (where the item's destination is).
        public var root: String
        /// TCP connections per item.
        public var connections: Int
        /// Failures without progress each connection may have.
        public var retries: Int
        /// The smallest range an item is split into.
        public var minSegment: Int64
        /// Seconds under `min_rate` after which a request, or a source, is too slow.
        public var timeout: Double
        /// Request headers, in order: `defaults:`, the item's, the command line's.
        public var headers: [HTTPHeader]
        /// Names of headers and query parameters whose values are never shown.
        public var redact: [String]
        /// Labels for `--tag` / `--skip-tag`.
        public var tags: [String]
        /// TLS peers are not verified.
        public var insecure: Bool
        /// Headers go along to any origin a redirect leads to, not only the item's own.
        public var forwardHeaders: Bool
        /// The most bytes accepted for a body of unknown length, or announced for one of
        /// known length (`max_size`, `--max-size`).
        public var maxSize: Int64?
        /// How a present file is checked when the item has no checksum.
        public var refresh: RefreshPolicy
        /// Set when the item must fail without a transfer: its checksums list failed its
        /// signature check.
        public var failure: ItemError?
    }

    public let values: Values

    init(_ values: Values) { self.values = values }

    /// A value by its name: `options.timeout`.
    public subscript<Value>(dynamicMember path: KeyPath<Values, Value>) -> Value { values[keyPath: path] }

    /// The request header lines (`Name: value`) the options give.
    var headerLines: [String] { values.headers.map { "\($0.name): \($0.value)" } }

    /// What the command line sets for every item (`--connections`, `--retries`,
    /// `--header`, `--max-size`), over the manifest.
    struct Overrides: Sendable {
        var connections: Int?
        var retries: Int?
        var headers: [HTTPHeader] = []
        var maxSize: Int64?
    }

    /// The options `own` (an item's, or a set's for its lists) resolve to over
    /// `defaults`, under the command line's `overrides`, for an item under `root`.
    static func resolve(
        _ own: ItemSettings, defaults: ItemSettings, overrides: Overrides = Overrides(), root: String,
        failure: ItemError? = nil
    ) -> Values {
        let connections = overrides.connections ?? own.connections ?? defaults.connections ?? Rules.connections.defaultValue
        return Values(
            root: root,
            connections: connections,
            retries: overrides.retries ?? own.retries ?? defaults.retries ?? Rules.defaultRetries(connections: connections),
            minSegment: own.minSegment ?? defaults.minSegment ?? Rules.minSegment.defaultValue,
            timeout: own.timeout ?? defaults.timeout ?? Rules.timeout.defaultValue,
            headers: mergeHeaders(defaults.headers ?? [], own.headers ?? [], overrides.headers),
            redact: (defaults.redact ?? []) + (own.redact ?? []),
            tags: own.tags ?? defaults.tags ?? [],
            insecure: own.insecure ?? defaults.insecure ?? false,
            forwardHeaders: own.forwardHeaders ?? defaults.forwardHeaders ?? false,
            maxSize: overrides.maxSize ?? own.maxSize ?? defaults.maxSize,
            refresh: own.refresh ?? defaults.refresh ?? .conditional,
            failure: failure)
    }

    /// Later lists override earlier ones header by header (names compare case-insensitively).
    static func mergeHeaders(_ lists: [HTTPHeader]...) -> [HTTPHeader] {
        var merged: [HTTPHeader] = []
        for list in lists {
            for header in list {
                merged.removeAll { $0.name.caseInsensitiveCompare(header.name) == .orderedSame }
                merged.append(header)
            }
        }
        return merged
    }
}
