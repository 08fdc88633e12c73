import Foundation

/// A JSON value whose objects keep their keys in the order written, so reports read
/// in the order docs/reports.md#json-report documents (Foundation's encoder on Linux does not keep
/// it).
enum JSONValue {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func string(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    static func int(_ value: Int?) -> JSONValue { value.map { .int(Int64($0)) } ?? .null }
    static func int(_ value: Int64?) -> JSONValue { value.map { .int($0) } ?? .null }

    /// Pretty-printed with two-space indentation.
    func rendered(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent + 1)
        let close = String(repeating: "  ", count: indent)
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .double(let value): return value.isFinite ? "\(value)" : "null"
        case .string(let value): return JSONValue.quote(value)
        case .array(let values):
            if values.isEmpty { return "[]" }
            if values.allSatisfy({ if case .string = $0 { true } else { false } }) {
                return "[" + values.map { $0.rendered() }.joined(separator: ", ") + "]"
            }
            return "[\n" + values.map { pad + $0.rendered(indent: indent + 1) }.joined(separator: ",\n") + "\n\(close)]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n"
                + members.map { pad + JSONValue.quote($0.0) + ": " + $0.1.rendered(indent: indent + 1) }.joined(separator: ",\n")
                + "\n\(close)}"
        }
    }

    /// On one line with no spaces: a JSON Lines record.
    func compact() -> String {
        switch self {
        case .array(let values): return "[" + values.map { $0.compact() }.joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { JSONValue.quote($0.0) + ":" + $0.1.compact() }.joined(separator: ",") + "}"
        default: return rendered()
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension ItemResult {
    var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("dest", .string(dest)), ("url", .string(url)), ("tag", .int(tag)), ("tags", .array(tags.map { .string($0) })),
            ("status", .string(status.rawValue)), ("bytes", .int(bytes)), ("bytes_downloaded", .int(bytesDownloaded)),
            ("bytes_received", .int(bytesReceived)), ("resumed_from", .int(resumedFrom)), ("connections", .int(connections)),
            ("attempts", .int(attempts)),
            ("duration_s", .double(RunReport.rounded(durationS))), ("sha256_expected", .string(sha256Expected)),
            ("sha256_actual", .string(sha256Actual)), ("error", error?.json ?? .null),
        ]
        if sha512Expected != nil || sha512Actual != nil {
            members.append(("sha512_expected", .string(sha512Expected)))
            members.append(("sha512_actual", .string(sha512Actual)))
        }
        if insecure { members.append(("insecure", .bool(true))) }
        if let note { members.append(("note", .string(note))) }
        if let link { members.append(("link", .string(link))) }
        if let keptUntil { members.append(("kept_until", .string(keptUntil))) }
        return .object(members)
    }
}

extension ItemError {
    var json: JSONValue { .object([("code", .string(code.rawValue)), ("message", .string(message))]) }
}

extension RunReport {
    var json: JSONValue {
        var members = summaryMembers
        members.append(("items", .array(items.map(\.json))))
        return .object(members)
    }

    /// Everything but the items: the report's head, which `run_finished` events repeat.
    var summaryMembers: [(String, JSONValue)] {
        let totals = self.totals
        var members: [(String, JSONValue)] = [
            ("jgmirror", .string(jgmirror)), ("command", .string(command)), ("manifest", .string(manifest)),
        ]
        if let run { members.append(("run", run.json)) }
        members += [
            ("started", .string(RunReport.timestamp(started))), ("finished", .string(RunReport.timestamp(finished))),
            ("duration_s", .double(RunReport.rounded(durationS))), ("exit_code", .int(Int64(exitCode.rawValue))),
        ]
        if !attempts.isEmpty || isIncomplete {
            members.append(("incomplete", .bool(isIncomplete)))
            members.append(("missing_shards", .array(missingShards.map { .string($0.description) })))
        }
        members.append(
            (
                "totals",
                .object([
                    ("items", .int(totals.items)), ("downloaded", .int(totals.downloaded)), ("unchanged", .int(totals.unchanged)),
                    ("failed", .int(totals.failed)), ("mismatch", .int(totals.mismatch)), ("unverified", .int(totals.unverified)),
                    ("interrupted", .int(totals.interrupted)), ("skipped", .int(totals.skipped)),
                    ("verified", .int(totals.verified)),
                    ("missing", .int(totals.missing)), ("deleted", .int(totals.deleted)),
                    ("delete_skipped", .int(totals.deleteSkipped)), ("kept_removed", .int(totals.keptRemoved)),
                    ("not_served", .int(totals.notServed)),
                    ("bytes_downloaded", .int(totals.bytesDownloaded)),
                    ("bytes_received", .int(totals.bytesReceived)),
                ])
            ))
        if !attempts.isEmpty { members.append(("attempts", .array(attempts.map(\.json)))) }
        if let error { members.append(("error", error.json)) }
        if !warnings.isEmpty { members.append(("warnings", .array(warnings.map { .string($0) }))) }
        if !hosts.isEmpty { members.append(("hosts", .array(hosts.map(\.json)))) }
        if let snapshot {
            members.append(
                (
                    "snapshot",
                    .object([
                        ("current", .string(snapshot.current)), ("published", .bool(snapshot.published)),
                        ("unchanged", .bool(snapshot.unchanged)),
                    ])
                ))
        }
        if !setSnapshots.isEmpty {
            let sets = setSnapshots.map { set -> JSONValue in
                .object([
                    ("folder", .string(set.folder)), ("current", .string(set.current)), ("published", .bool(set.published)),
                    ("unchanged", .bool(set.unchanged)),
                ])
            }
            members.append(("set_snapshots", .array(sets)))
        }
        return members
    }
}
