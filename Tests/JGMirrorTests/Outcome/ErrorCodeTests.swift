import Foundation
import Testing

@testable import JGMirror

@Suite struct ErrorCodeTests {
    @Test func everyCodeRoundTripsThroughItsReportSpelling() throws {
        // The one list of codes: a code missing from it has no spelling to read back.
        let codes = ErrorCode.allCases + [.http(503), .http(100), .http(999)]
        #expect(Set(codes.map(\.rawValue)).count == codes.count)
        for code in codes { #expect(ErrorCode(rawValue: code.rawValue) == code) }
        #expect(ErrorCode.http(404).rawValue == "http_404")
        #expect(ErrorCode.sizeMismatch.rawValue == "size_mismatch")
        #expect(ErrorCode.protocolViolation.rawValue == "protocol")
        #expect(ErrorCode.hostDown.rawValue == "host_down" && ErrorCode.rateLimited.rawValue == "rate_limited")
        #expect(ErrorCode.deadline.rawValue == "deadline")
        #expect(
            ErrorCode(rawValue: "http_x") == nil && ErrorCode(rawValue: "bogus") == nil && ErrorCode(rawValue: "http_99") == nil)
        let json = try JSONEncoder().encode(ItemError(code: .http(416), message: "m"))
        #expect(String(decoding: json, as: UTF8.self).contains("\"http_416\""))
        #expect(try JSONDecoder().decode(ItemError.self, from: json).code == .http(416))
    }

    /// Each kind the compiler lists is one code, read back from its own spelling, and
    /// has its row in the error-code table of the docs.
    @Test(arguments: ErrorCode.Kind.allCases)
    func everyKindIsACodeWithItsOwnSpelling(kind: ErrorCode.Kind) {
        let code = kind.code
        #expect(code.kind == kind)
        #expect(ErrorCode(rawValue: code.rawValue) == code)
        #expect(ErrorCode.allCases.contains(code))
        let spelling = kind == .http ? "http_NNN" : kind.rawValue
        #expect(code.rawValue == (kind == .http ? "http_404" : kind.rawValue))
        #expect(ReferencePage.errorCodes.contains("| `\(spelling)` | \(code.exitCode.rawValue) | "))
    }

    @Test func onlyAStatusMakesAnHTTPCode() {
        #expect(ErrorCode(rawValue: "http") == nil && ErrorCode(rawValue: "http_") == nil)
        #expect(ErrorCode.allCases.count == ErrorCode.Kind.allCases.count)
        #expect(ErrorCode.allCases.filter { $0.kind == .http } == [.http(404)])
    }

    @Test func eachCodeKnowsItsExitClass() {
        #expect(ErrorCode.diskFull.exitCode == .local && ErrorCode.unsafePath.isLocal && ErrorCode.curl.isLocal)
        #expect(ErrorCode.http(500).exitCode == .transferFailed && !ErrorCode.sizeMismatch.isLocal)
        #expect(ErrorCode.hostDown.exitCode == .transferFailed && ErrorCode.rateLimited.exitCode == .transferFailed)
        #expect(ErrorCode.deadline.exitCode == .transferFailed)
        #expect(ErrorCode.tooLarge.exitCode == .transferFailed && ErrorCode.usage.exitCode == .usage && ErrorCode.local.isLocal)
        #expect(
            ErrorCode.checksumMismatch.exitCode == .integrity && ErrorCode.signature.exitCode == .integrity
                && ErrorCode.manifest.exitCode == .usage)
        let local = ItemResult(dest: "a", url: "u", status: .failed, error: ItemError(code: .permissionDenied, message: ""))
        let remote = ItemResult(dest: "b", url: "u", status: .failed, error: ItemError(code: .http(404), message: ""))
        #expect(ExitCode.forResults([local]) == .local && ExitCode.forResults([remote]) == .transferFailed)
    }
}
