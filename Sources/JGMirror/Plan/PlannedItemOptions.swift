/// The resolved options of planned items, immutable and shared by reference among
/// the items that resolve to the same ones (`PlannedItem` copies on write).
final class PlannedItemOptions: Sendable {
    struct Values: Sendable, Equatable {
        var root: String
        var connections: Int
        var retries: Int
        var minSegment: Int64
        var timeout: Double
        var headers: [HTTPHeader]
        var redact: [String]
        var tags: [String]
        var insecure: Bool
        var forwardHeaders: Bool
        var maxSize: Int64?
        var refresh: RefreshPolicy
        var failure: ItemError?
    }

    let values: Values

    init(_ values: Values) { self.values = values }
}
