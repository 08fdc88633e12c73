/// What gpgv's status lines (`--status-fd`, gnupg's doc/DETAILS) say of a Release's
/// signatures, judged as apt judges them, not by gpgv's exit code alone.
///
/// A Release may carry several signatures (Debian signs with the archive key of
/// each supported release while keys change over). gpgv exits 2 when one of them is
/// by a key the keyring lacks, even if another is good; apt accepts such a Release,
/// and so does this. What counts:
/// - accepted: at least one signature that is good (`GOODSIG` + `VALIDSIG`), by a key
///   neither expired nor revoked, over a digest apt trusts (not MD5, SHA-1 or
///   RIPEMD-160), and no signature that is bad (`BADSIG`: a key of the keyring
///   signed other bytes — the file was changed);
/// - ignored beside a good one: signatures by keys not in the keyring, by expired or
///   revoked keys, over weak digests.
struct GpgvVerdict: Equatable, Sendable {
    /// Fingerprints of the good signatures' keys.
    var goodKeys: [String] = []
    /// Why the file is refused, or nil.
    var refusal: String?

    /// gpg's numbers for the digests apt refuses (RFC 4880 §9.4).
    static let weakDigests: [String: String] = ["1": "MD5", "2": "SHA-1", "3": "RIPEMD-160"]

    /// One signature's status lines, from its `NEWSIG` to the next.
    private struct Signature {
        var valid: (fingerprint: String, digest: String)?
        var good = false
        var bad: String?
        var worthless: String?
        var missingKey: String?
        var error: String?
    }

    /// Judges the status lines of one gpgv run.
    init(status: String) {
        var signatures: [Signature] = []
        for line in status.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2, words[0] == "[GNUPG:]" else { continue }
            let (keyword, arguments) = (words[1], Array(words.dropFirst(2)))
            if keyword == "NEWSIG" || signatures.isEmpty { signatures.append(Signature()) }
            Self.apply(keyword, arguments, to: &signatures[signatures.count - 1])
        }
        let good = signatures.filter { $0.good && $0.bad == nil && $0.worthless == nil && $0.valid != nil }
        goodKeys = good.compactMap { $0.valid?.fingerprint }
        if let bad = signatures.compactMap(\.bad).first {
            refusal = "BAD signature by key \(bad): the file was changed after it was signed"
        } else if goodKeys.isEmpty {
            let reasons = signatures.compactMap { $0.worthless ?? $0.missingKey ?? $0.error }
            refusal = reasons.isEmpty ? "no valid signature" : reasons.joined(separator: "; ")
        }
    }

    private static func apply(_ keyword: String, _ arguments: [String], to signature: inout Signature) {
        let key = arguments.first ?? "?"
        switch keyword {
        case "GOODSIG": signature.good = true
        case "BADSIG": signature.bad = key
        case "EXPSIG": signature.worthless = "the signature by key \(key) has expired"
        case "EXPKEYSIG": signature.worthless = "key \(key) has expired"
        case "REVKEYSIG": signature.worthless = "key \(key) is revoked"
        case "NO_PUBKEY": signature.missingKey = "signed by key \(key), which is not in the keyring"
        case "ERRSIG":
            // ERRSIG KEYID PKALGO HASHALGO CLASS TIME RC: RC 9 is a missing key (NO_PUBKEY follows).
            if arguments.count >= 6, arguments[5] != "9" {
                signature.error = "gpgv cannot check the signature by key \(key) (error \(arguments[5]))"
            }
        case "NODATA": signature.error = "no OpenPGP signature in it"
        case "VALIDSIG":
            // VALIDSIG FPR DATE TIMESTAMP EXPIRE VERSION RESERVED PKALGO HASHALGO CLASS …
            let digest = arguments.count > 7 ? arguments[7] : ""
            signature.valid = (key, digest)
            if let weak = weakDigests[digest] {
                signature.worthless = "the signature by key \(key) uses \(weak), a digest apt refuses"
            }
        default: break
        }
    }
}
