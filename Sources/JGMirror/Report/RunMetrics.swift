import Foundation
import Prometheus

/// The node_exporter textfile rendering of a run (docs/reports.md#metrics): gauges
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
        gauge(
            lastRun("exit_code", "The last run's exit code (0 = every item present and verified)."),
            Double(report.exitCode.rawValue))
        var counts = Dictionary(uniqueKeysWithValues: ItemStatus.allCases.map { ($0, 0) })
        report.forEachItem { item in counts[item.status, default: 0] += 1 }
        let items = MetricNameDescriptor(
            namespace: "jgmirror", metricName: "items", unitName: "", helpText: "Items of the last run per status.")
        for status in ItemStatus.allCases {
            registry.makeGauge(descriptor: items, labels: label + [("status", status.rawValue)]).set(Double(counts[status] ?? 0))
        }
        gauge(lastRun("bytes_downloaded", "Bytes the last run kept of what it fetched."), Double(report.totals.bytesDownloaded))
        gauge(
            lastRun("bytes_received", "Body bytes the last run received, kept or not."), Double(report.totals.bytesReceived))
        gauge(
            lastRun("bytes_verified", "Bytes of the items the last run found matching their checksum."),
            Double(bytesVerified(report)))
        hostSeries(report.hosts, labels: label, in: registry)
        // The text format wants a line feed after the last sample too.
        let text = registry.emitToString()
        return text.hasSuffix("\n") ? text : text + "\n"
    }

    /// The report's `hosts` as one series per origin (`jgmirror_host_*`), labelled with
    /// the origin only, never a path, query or credential; `jgmirror_host_state` is 1
    /// for the state the host ended in and 0 for the others.
    static func hostSeries(_ hosts: [HostSummary], labels: [(String, String)], in registry: PrometheusCollectorRegistry) {
        func host(_ name: String, unit: String = "", _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "jgmirror", subsystem: "host", metricName: name, unitName: unit, helpText: help)
        }
        let series: [(MetricNameDescriptor, (HostSummary) -> Double)] = [
            (host("requests", "Requests the last run sent to the origin."), { Double($0.requests) }),
            (host("bytes", "Body bytes from the origin the last run kept."), { Double($0.bytes) }),
            (
                host("bytes_received", "Body bytes the origin delivered in the last run, kept or not."),
                { Double($0.bytesReceived) }
            ),
            (host("failures", "Requests to the origin that got no answer in the last run."), { Double($0.failures) }),
            (host("throttled", "429 and 503 answers from the origin in the last run."), { Double($0.throttled) }),
            (host("cooling", unit: "seconds", "Seconds the origin asked the last run to wait."), { $0.coolingS }),
        ]
        let state = host("state", "1 for the state the origin ended the last run in (up, cooling, suspect, down).")
        for summary in hosts {
            let origin = labels + [("origin", summary.origin)]
            for (descriptor, value) in series {
                let sample: Double = value(summary)
                registry.makeGauge(descriptor: descriptor, labels: origin).set(sample)
            }
            for name in ["up", "cooling", "suspect", "down"] {
                let sample: Double = summary.state == name ? 1 : 0
                registry.makeGauge(descriptor: state, labels: origin + [("state", name)]).set(sample)
            }
        }
    }

    /// Bytes of the items whose content matched a checksum this run: fetched and
    /// verified, found unchanged, or verified on disk.
    public static func bytesVerified(_ report: RunReport) -> Int64 {
        var sum: Int64 = 0
        report.forEachItem { item in
            let matched =
                [.downloaded, .unchanged, .verified].contains(item.status)
                && (item.sha256Expected != nil || item.sha512Expected != nil)
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
