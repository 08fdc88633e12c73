import Foundation

/// The parts of docs/ that mirror a table of the code, rendered as Markdown: the
/// manifest's key reference from `Rules.table`, the exit codes from `ExitCode`, the
/// error codes from `ErrorCode`. `jgmirror --generate-reference NAME` prints one, and
/// `scripts/docs.sh` writes each between its markers in docs/ (`--check` fails while
/// a page is stale), so the reference never says what the code does not.
public enum ReferencePage {
    /// Every section's name, as the markers in docs/ name it.
    public static let sections = [
        "bounds", "top-keys", "item-keys", "host-keys", "set-keys", "sums-keys", "apt-keys", "checksums-keys", "link-keys",
        "exit-codes",
        "error-codes",
    ]

    /// The section called `name`, ending in a newline; nil for an unknown name.
    public static func section(_ name: String) -> String? {
        switch name {
        case "bounds": bounds
        case "top-keys": keys(in: .top)
        case "item-keys": keys(in: .item, leaving: ["link"])
        case "host-keys": keys(in: .origin)
        case "set-keys":
            keys(in: .set, leaving: shared) + "\nAnd every item option: " + shared.map { "`\($0)`" }.joined(separator: ", ")
                + ".\n"
        case "sums-keys": keys(in: .sums)
        case "apt-keys": keys(in: .apt)
        case "checksums-keys": keys(in: .checksums)
        case "link-keys": keys(in: .link)
        case "exit-codes": exitCodes
        case "error-codes": errorCodes
        default: nil
        }
    }

    /// The keys items take from `defaults` and sets take too.
    static var shared: [String] { Rules.keys(in: .defaults).filter { Rules.keys(in: .item).contains($0) } }

    /// One table of the keys a mapping of `place` allows, `leaving` some out.
    static func keys(in place: OptionRow.Place, leaving: [String] = []) -> String {
        var lines = [
            "| key | type | default | bounds | command line | what it does | example |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in Rules.table where row.places.contains(place) {
            guard let key = row.key, !leaving.contains(key) else { continue }
            let example = row.example.map { "`\(key): \($0)`" } ?? ""
            lines.append(
                cells([
                    "`\(key)`", row.type, row.defaultText, row.bounds ?? "", flags(row), row.help + ".", example,
                ]))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every bounded value: the key, the options that take it, its default and bounds.
    static var bounds: String {
        var lines = ["| manifest key | command line | default | bounds | what it is |", "|---|---|---|---|---|"]
        let numeric: Set = ["whole number", "size", "duration", "rate"]
        var seen: Set<String> = []
        for row in Rules.table where numeric.contains(row.type) && row.bounds != nil && row.places != [.top] {
            guard seen.insert(row.name).inserted else { continue }
            lines.append(
                cells([
                    row.key.map { "`\($0)`" } ?? "—", flags(row).isEmpty ? row.label ?? "—" : flags(row), row.defaultText,
                    row.bounds ?? "", row.help,
                ]))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The exit codes, what each means, and which wins when several apply.
    static var exitCodes: String {
        var lines = ["| code | meaning |", "|---|---|"]
        for code in ExitCode.allCases { lines.append(cells(["\(code.rawValue)", code.meaning])) }
        return lines.joined(separator: "\n") + "\n\n" + ExitCode.precedenceRule + "\n"
    }

    /// Every error code, the exit code it leads to, and what it means.
    static var errorCodes: String {
        var lines = ["| code | exit | meaning |", "|---|---|---|"]
        for code in ErrorCode.allCases {
            let spelling = code.kind == .http ? "http_NNN" : code.rawValue
            lines.append(cells(["`\(spelling)`", "\(code.exitCode.rawValue)", code.meaning]))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The command-line options of a row, each in code.
    static func flags(_ row: OptionRow) -> String { row.flags.map { "`\($0)`" }.joined(separator: ", ") }

    /// One Markdown table row; a `|` or `<` inside a cell is escaped.
    static func cells(_ values: [String]) -> String {
        let escaped = values.map { $0.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "<", with: "&lt;") }
        return "| " + escaped.joined(separator: " | ") + " |"
    }
}
