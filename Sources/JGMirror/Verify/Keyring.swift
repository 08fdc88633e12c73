import Foundation

/// OpenPGP keyrings as users export them. gpgv reads only binary keyrings, and a
/// keyring exported with `gpg --export --armor` made every signature fail as if the
/// list had been tampered with; an armored one is turned into the binary form
/// (`gpg --dearmor`'s job, RFC 4880 §6) before gpgv sees it.
enum Keyring {
    /// Why an armored keyring cannot be read.
    struct Problem: Error, Equatable {
        let message: String
    }

    /// Whether `data` is ASCII armor rather than binary packets.
    static func isArmored(_ data: Data) -> Bool {
        let start = data.prefix(64).drop {
            $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF
        }
        return start.starts(with: Array("-----BEGIN PGP ".utf8))
    }

    /// The binary packets of every armored block in `text`, checked against each
    /// block's CRC-24 when it has one.
    static func dearmor(_ data: Data) throws(Problem) -> Data {
        let text = String(decoding: data, as: UTF8.self)
        var packets = Data()
        var inBlock = false
        var inBody = false
        var base64 = ""
        var checksum: String?
        var blocks = 0
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if !inBlock {
                if line.hasPrefix("-----BEGIN PGP ") { (inBlock, inBody, base64, checksum) = (true, false, "", nil) }
                continue
            }
            if line.hasPrefix("-----END PGP ") {
                guard let decoded = Data(base64Encoded: base64), !decoded.isEmpty else {
                    throw Problem(message: "its armored block \(blocks + 1) is not valid base64")
                }
                if let checksum, checksum != crc24Base64(decoded) {
                    throw Problem(message: "its armored block \(blocks + 1) fails its CRC-24 checksum (damaged in transit?)")
                }
                packets.append(decoded)
                blocks += 1
                inBlock = false
            } else if !inBody {
                // Armor headers ("Comment: …") end at the first blank line.
                if line.isEmpty { inBody = true } else if !line.contains(":") { (inBody, base64) = (true, line) }
            } else if line.hasPrefix("=") && line.count == 5 {
                checksum = String(line.dropFirst())
            } else {
                base64 += line
            }
        }
        guard blocks > 0 else { throw Problem(message: "it has no complete armored block (BEGIN PGP … END PGP)") }
        return packets
    }

    /// The armor checksum of `data`: CRC-24 (RFC 4880 §6.1), base64.
    static func crc24Base64(_ data: Data) -> String {
        var crc: UInt32 = 0xB7_04CE
        for byte in data {
            crc ^= UInt32(byte) << 16
            for _ in 0..<8 {
                crc <<= 1
                if crc & 0x100_0000 != 0 { crc ^= 0x186_4CFB }
            }
        }
        crc &= 0xFF_FFFF
        return Data([UInt8(crc >> 16), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]).base64EncodedString()
    }

    /// The keyring gpgv is to read: `path` itself, or its packets written into
    /// `folder` when it is armored.
    static func usable(_ path: String, in folder: String) throws(Problem) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw Problem(message: "cannot read it") }
        guard isArmored(data) else { return path }
        let binary = folder + "/keyring.gpg"
        guard FileManager.default.createFile(atPath: binary, contents: try dearmor(data)) else {
            throw Problem(message: "cannot write its dearmored copy to \(binary)")
        }
        return binary
    }
}
