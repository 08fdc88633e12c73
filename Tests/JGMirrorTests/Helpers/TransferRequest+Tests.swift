import Foundation

@testable import JGMirror

extension TransferRequest {
    /// A request with its options written out, as the engine's tests build them: the
    /// options a plan would resolve (`ItemOptions`) from these.
    init(
        id: Int, sources: [String], root: RootDirectory, partPath: String, statePath: String, expectedSize: Int64?,
        connections: Int, retries: Int, minSegment: Int64, timeout: Double, headers: [String], insecure: Bool,
        resume: Bool, observer: PartFileObserver? = nil, sizeLimit: Int64? = nil, conditions: [String] = []
    ) {
        var own = ItemSettings()
        (own.connections, own.retries, own.minSegment, own.timeout) = (connections, retries, minSegment, timeout)
        own.headers = headers.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return HTTPHeader(
                name: String(line[..<colon]),
                value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        own.insecure = insecure
        own.maxSize = sizeLimit
        self.init(
            id: id, sources: sources, root: root, partPath: partPath, statePath: statePath, expectedSize: expectedSize,
            options: ItemOptions(ItemOptions.resolve(own, defaults: ItemSettings(), root: root.path)), resume: resume,
            observer: observer, conditions: conditions)
    }
}
