import Foundation

/// JUnit XML for CI dashboards: one test case per item (`--junit`).
public enum JUnitReport {
    public static func xml(for report: RunReport) -> String {
        var xml = ""
        write(report, to: { xml += $0 })
        return xml
    }

    /// `xml(for:)` handed to `emit` in pieces of about 64 KiB, so that a large run's
    /// report is never held whole.
    public static func write(_ report: RunReport, to emit: (String) -> Void) {
        let totals = report.totals
        let failures = totals.failed + totals.mismatch + totals.missing + totals.interrupted + totals.deleteSkipped
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites>\n"
        xml +=
            "  <testsuite name=\"jgmirror \(escape(report.command))\" tests=\"\(report.itemCount)\" failures=\"\(failures)\" skipped=\"\(totals.skipped)\" time=\"\(RunReport.rounded(report.durationS))\" timestamp=\"\(RunReport.timestamp(report.started))\">\n"
        report.forEachItem { item in
            xml +=
                "    <testcase classname=\"\(escape(report.manifest ?? "jgmirror"))\" name=\"\(escape(item.dest))\" time=\"\(RunReport.rounded(item.durationS))\">\n"
            switch item.status {
            case .failed, .mismatch, .missing, .interrupted, .deleteSkipped:
                let code = item.error?.code.rawValue ?? item.status.rawValue
                let message = item.error?.message ?? item.status.rawValue
                xml +=
                    "      <failure type=\"\(escape(code))\" message=\"\(escape(message))\">\(escape(describe(item)))</failure>\n"
            case .skipped:
                xml += "      <skipped/>\n"
            default:
                xml += "      <system-out>\(escape(describe(item)))</system-out>\n"
            }
            xml += "    </testcase>\n"
            if xml.utf8.count >= 64 << 10 {
                emit(xml)
                xml.removeAll(keepingCapacity: true)
            }
        }
        xml += "  </testsuite>\n</testsuites>\n"
        emit(xml)
    }

    private static func describe(_ item: ItemResult) -> String {
        var lines = ["status: \(item.status.rawValue)", item.link.map { "link: \($0)" } ?? "url: \(item.url)"]
        if let bytes = item.bytes { lines.append("bytes: \(bytes)") }
        if let expected = item.sha256Expected { lines.append("sha256 expected: \(expected)") }
        if let actual = item.sha256Actual { lines.append("sha256 actual: \(actual)") }
        if let keptUntil = item.keptUntil { lines.append("kept until: \(keptUntil)") }
        if let note = item.note { lines.append("note: \(note)") }
        return lines.joined(separator: "\n")
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" {
                    out += "?"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
