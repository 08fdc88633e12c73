import Foundation
import JGMirror
import Testing

/// The JSON object in the file at `path` (a report, resume state), by key.
func loadReport(_ path: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
}

/// Whether the resume state at `path` records bytes received: an interrupt after it
/// leaves something to resume.
func resumeStateHoldsBytes(_ path: String) -> Bool {
    guard let state = try? loadReport(path), let length = state["length"] as? Int,
        let missing = state["missing"] as? [[Int]]
    else { return false }
    return missing.reduce(0) { $0 + ($1.count == 2 ? $1[1] - $1[0] : 0) } < length
}

/// Every sample of a textfile, parsed by the `prometheus_client` Python package's
/// text-format parser, keyed `name{label=value,…}` with labels sorted.
func prometheusSamples(_ path: String) async throws -> [String: Double] {
    let script = """
        import sys
        from prometheus_client.parser import text_string_to_metric_families
        for family in text_string_to_metric_families(open(sys.argv[1]).read()):
            for s in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                print(f"{s.name}{{{labels}}}\\t{s.value!r}")
        """
    let parsed = try await runProgram("python3", ["-c", script, path])
    try #require(
        parsed.status == 0 && !parsed.signalled,
        "the Prometheus parser refused \(path) (pip install prometheus-client): \(parsed.stderr)")
    var samples: [String: Double] = [:]
    for line in parsed.stdout.split(separator: "\n") {
        let parts = line.split(separator: "\t")
        samples[String(parts[0])] = Double(parts[1])
    }
    return samples
}

/// The status `report` gives the item at `dest`, nil when it has none.
func status(_ report: RunReport, _ dest: String) -> ItemStatus? { report.items.first { $0.dest == dest }?.status }

/// The error code of an item's row in a JSON report, nil when it did not fail.
func code(_ item: [String: Any]) -> String? { (item["error"] as? [String: Any])?["code"] as? String }
