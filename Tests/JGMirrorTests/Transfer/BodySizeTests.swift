import Foundation
import TestServer
import Testing

@testable import JGMirror

/// A body whose length contradicts the manifest's `size` or its own announcement fails
/// `size_mismatch` and leaves no file (docs/safety.md#size-limits), against the in-process origin.
@Suite struct BodySizeTests: OriginSuite {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 42)

    init() throws { server = try TestServer() }

    @Test(arguments: [2, -2])
    func aSizeTheServerContradictsFailsWithoutAFile(scale: Int) async throws {
        // The manifest says twice the size (regions past the end get 416) or half of it.
        serve()
        let size = scale > 0 ? body.count * scale : body.count / -scale
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), extra: segmented + "\nsize: \(size)"), in: dir)
            #expect(report.items.first?.error?.code == .sizeMismatch, "\(String(describing: report.items.first?.error))")
            #expect(report.exitCode == .transferFailed)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    @Test func bodyLongerThanItsSizeFailsSizeMismatch() async throws {
        // A close-delimited body that runs past the manifest's size.
        serve {
            $0.noLength = true
            $0.extraBytes = 1 << 20
        }
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), extra: "size: \(body.count)"), in: dir)
            #expect(report.items.first?.error?.code == .sizeMismatch)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    @Test func bytesBeyondContentLengthNeverReachTheFile() async throws {
        // libcurl frames the body by Content-Length; what follows is not written.
        serve { $0.extraBytes = 1 << 20 }
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), sha256: sha(body), extra: "connections: 1"), in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(report.items.first?.bytes == Int64(body.count))
        }
    }

    @Test func endlessBodyIsCutAtTheManifestSize() async throws {
        serve { $0.endless = true }
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), extra: "size: 1MiB"), in: dir)
            #expect(report.items.first?.error?.code == .sizeMismatch)
            #expect(report.exitCode == .transferFailed)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    @Test func announcedLengthOtherThanSizeFails() async throws {
        serve()
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), extra: "size: 1000"), in: dir)
            #expect(report.items.first?.error?.code == .sizeMismatch)
        }
    }
}
