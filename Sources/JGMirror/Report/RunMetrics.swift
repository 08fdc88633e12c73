import Foundation
import Prometheus

/// The node_exporter textfile rendering of a run (SPEC §10a `--metrics`): gauges
/// labelled with the manifest, built and rendered by swift-prometheus.
public enum RunMetrics {
    /// The metrics text for `report`; `manifest` is the `manifest` label (the report's
    /// own manifest path when nil).
    public static func render(_ report: RunReport, manifest: String? = nil) -> String {
        let registry = PrometheusCollectorRegistry()
        let label = [("manifest", manifest ?? report.manifest ?? "")]
        func lastRun(_ name: String, unit: String = "", _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "jgmirror", subsystem: "last_run", metricName: name, unitName: unit, helpText: help)
        }
        func gauge(_ descriptor: MetricNameDescriptor, _ value: Double) {
            registry.makeGauge(descriptor: descriptor, labels: label).set(value)
        }
        gauge(
            lastRun("timestamp", unit: "seconds", "When the last run finished, in seconds since the Unix epoch."),
            report.finished.timeIntervalSince1970)
        gauge(lastRun("duration", unit: "seconds", "How long the last run took."), report.durationS)
        gauge(lastRun("exit_code", "The last run's exit code (0 = every item present and verified)."), Double(report.exitCode.rawValue))
        var counts = Dictionary(uniqueKeysWithValues: ItemStatus.allCases.map { ($0, 0) })
        report.forEachItem { item in counts[item.status, default: 0] += 1 }
        let items = MetricNameDescriptor(namespace: "jgmirror", metricName: "items", unitName: "", helpText: "Items of the last run per status.")
        for status in ItemStatus.allCases {
            registry.makeGauge(descriptor: items, labels: label + [("status", status.rawValue)]).set(Double(counts[status] ?? 0))
        }
        gauge(lastRun("bytes_downloaded", "Bytes received in the last run."), Double(report.totals.bytesDownloaded))
        gauge(
            lastRun("bytes_verified", "Bytes of the items the last run found matching their checksum."),
            Double(bytesVerified(report)))
        // The text format wants a line feed after the last sample too.
        let text = registry.emitToString()
        return text.hasSuffix("\n") ? text : text + "\n"
    }

    /// Bytes of the items whose content matched a checksum this run: fetched and
    /// verified, found unchanged, or verified on disk.
    public static func bytesVerified(_ report: RunReport) -> Int64 {
        var sum: Int64 = 0
        report.forEachItem { item in
            let matched = [.downloaded, .unchanged, .verified].contains(item.status) && (item.sha256Expected != nil || item.sha512Expected != nil)
            if matched { sum = sum.addingSaturated(item.bytes ?? 0) }
        }
        return sum
    }

    /// Writes `text` to `path` atomically: a temporary file beside it (whose name
    /// node_exporter ignores, having no `.prom` suffix) renamed over it, so a scrape
    /// never reads half a file.
    public static func write(_ text: String, to path: String) throws(SyncError) {
        do { try OutputFile.write(path) { $0(text) } } catch { throw .local("cannot write metrics \(path): \(error.reason)") }
    }
}
