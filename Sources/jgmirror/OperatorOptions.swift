import ArgumentParser
import Foundation
import JGMirror

/// `--report`, `--junit`, `--events` and `--metrics` (docs/reports.md#json-report,
/// docs/reports.md#events): what monitoring and CI read of a run. `plan` runs nothing, so it has
/// none of them: its table on stdout is the plan.
struct OperatorOptionGroup: ParsableArguments {
    @Option(help: "Write the JSON report there ('-' for stdout).")
    var report: String?

    @Option(help: "Also write a JUnit XML report there.")
    var junit: String?

    @Option(
        help: "Write Prometheus textfile metrics there at the end of the run, atomically (node_exporter's textfile collector).")
    var metrics: String?

    @Option(help: "Write JSON Lines events there as they happen ('-' for stdout).")
    var events: String?

    /// Decides where each output goes, before anything is read or fetched
    /// (docs/safety.md#output-files): exits 2 naming the option and the path for one
    /// no output may take, or one that would replace `manifest`. The events stream is
    /// opened once the manifest says where its root is (`ManifestOptionGroup.loadPlan`).
    func outputs(manifest: String) throws(ArgumentParser.ExitCode) -> RunOutputs {
        try RunOutputs.open(
            [
                ("--report", report, .report), ("--junit", junit, .junit), ("--metrics", metrics, .metrics),
                ("--events", events, .events),
            ], guarding: [.file(manifest, what: "the manifest")])
    }
}

/// The command line's side of the outputs of a run: it names them and says what
/// went wrong; the library writes them.
extension RunOutputs {
    /// Resolves each option given; says what is wrong and ends the command with exit 2
    /// for a path no output may take, one named twice, or one that would replace what
    /// `guarded` names.
    static func open(
        _ options: [(option: String, path: String?, role: Role)], guarding guarded: [OutputTarget.Guarded] = []
    ) throws(ArgumentParser.ExitCode) -> RunOutputs {
        do {
            let outputs = try RunOutputs(options) { Terminal.error($0) }
            try outputs.refuse(guarded)
            return outputs
        } catch {
            Terminal.error(error.message)
            throw ExitCode(JGMirror.ExitCode.usage)
        }
    }

    /// Writes the reports, the metrics and `run_finished` with the final exit code,
    /// says which could not be written, and returns that code.
    func finishing(_ report: RunReport) -> JGMirror.ExitCode {
        let outcome = finish(report)
        for failure in outcome.failures { Terminal.error(failure) }
        return outcome.exitCode
    }
}

/// `--ca-cert`: every command that fetches takes it, `plan` and `verify` for the lists
/// they read, `sync` and `get` with their other transfer options.
struct TrustOptionGroup: ParsableArguments {
    @Option(name: .customLong("ca-cert"), help: "Trust this CA bundle in addition to the system's.")
    var caCert: String?

    func validate() throws {
        if let caCert, !FileManager.default.isReadableFile(atPath: caCert) {
            throw ValidationError("--ca-cert: cannot read \(caCert)")
        }
    }

    /// What fetching the lists needs beyond the manifest options: the CA bundle.
    var listOptions: SyncOptions {
        var options = SyncOptions()
        options.caCert = caCert
        return options
    }
}
