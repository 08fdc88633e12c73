import Foundation
import Testing

@testable import JGMirror

/// A plan's items share their resolved options (`ItemOptions`) by reference.
@Suite struct ItemOptionsTests {
    /// Items that resolve to the same options share one copy of them; changing one
    /// item's options leaves the others alone.
    @Test func itemsShareResolvedOptionsAndCopyOnWrite() throws {
        let yaml = """
            version: 1
            defaults: {connections: 3, headers: {X-Token: abc}, tags: [nightly]}
            items:
              - {url: "http://h/a", dest: a.bin}
              - {url: "http://h/b", dest: b.bin}
              - {url: "http://h/c", dest: c.bin, connections: 5}
              - {url: "http://h/d", dest: d.bin, connections: 5}
            """
        var items = Plan(manifest: try Manifest.parse(yaml, name: "shared.yaml")).items
        #expect(items[0].sharesOptions(with: items[1]))
        #expect(!items[1].sharesOptions(with: items[2]))
        #expect(items[2].sharesOptions(with: items[3]))
        #expect(items.map(\.connections) == [3, 3, 5, 5])
        #expect(
            items.allSatisfy { $0.options.headers == [HTTPHeader(name: "X-Token", value: "abc")] && $0.tags == ["nightly"] })
        items[0].failure = ItemError(code: .signature, message: "its list failed")
        #expect(items[0].failure != nil && items[1].failure == nil)
        #expect(!items[0].sharesOptions(with: items[1]))
        // The engine gets the same options by reference.
        #expect(items[2].options === items[3].options)
    }
}
