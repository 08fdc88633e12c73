import Foundation
import Testing

@testable import JGMirror

/// `PartFile`: a fresh part file never writes through a link in its place.
@Suite struct PartFileTests {
    @Test func aFreshPartFileReplacesALinkInsteadOfWritingThroughIt() async throws {
        try await withTestDirectory { directory in
            let precious = directory + "/precious"
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: precious))
            for (name, makeLink) in [("hard", link), ("soft", symlink)] {
                let path = directory + "/\(name).jgpart"
                #expect(makeLink(precious, path) == 0)
                let part = try PartFile(path: path, fresh: true, root: RootDirectory(path: directory))
                try Data("new".utf8).withUnsafeBytes { try part.write($0, at: 0) }
                #expect(try String(contentsOfFile: precious, encoding: .utf8) == "keep me")
                #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
            }
        }
    }
}
