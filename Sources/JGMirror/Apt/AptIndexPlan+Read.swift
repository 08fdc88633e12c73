/// Reading one form of an index: the fetched bytes checked against Release, then
/// decompressed within a bound, then checked again when Release lists the plain form.
extension AptIndexPlan.Readable {
    /// The largest index read: Debian's largest Packages is under 64 MiB.
    static let maxBytes = 1 << 30
    /// What a compressed index may grow to when Release does not list its plain
    /// size: 64 times its size (Packages compress about 10 times), at least 64 MiB.
    static let ratio = 64
    static let minLimit = 64 << 20

    /// How many bytes `form` may decompress to: the plain form's size when Release
    /// lists it (signed, so exact), else the bound of its compressed size.
    func limit(for form: AptRelease.File) -> Int {
        if let plain { return Int(min(plain.size, Int64(Self.maxBytes))) }
        let (product, overflow) = form.size.multipliedReportingOverflow(by: Int64(Self.ratio))
        return overflow ? Self.maxBytes : Int(min(max(product, Int64(Self.minLimit)), Int64(Self.maxBytes)))
    }

    /// The plain bytes of the form `format`, which arrived as `bytes`. `name` names the
    /// index in errors (its URL, or `dists/SUITE/` + path).
    func read(_ bytes: [UInt8], format: CompressionFormat, name: String) throws(AptError) -> [UInt8] {
        guard let form = forms.first(where: { $0.format == format })?.file else {
            throw .notInRelease(file: name, "Release does not list this form of \(base)")
        }
        try Self.check(bytes, against: form, name: name)
        guard format != .plain else { return bytes }
        if let plain, plain.size > Int64(Self.maxBytes) {
            throw .decompression(file: name, .tooLarge(limit: Self.maxBytes))
        }
        let text: [UInt8]
        do { text = try Decompressor.decompress(bytes, format: format, limit: limit(for: form)) } catch {
            throw .decompression(file: name, error)
        }
        if let plain { try Self.check(text, against: plain, name: name + " (decompressed)") }
        return text
    }

    /// Throws unless `bytes` have the size and SHA-256 Release gives `file`.
    static func check(_ bytes: [UInt8], against file: AptRelease.File, name: String) throws(AptError) {
        guard Int64(bytes.count) == file.size else {
            throw .mismatch(file: name, "\(bytes.count) bytes where Release says \(file.size)")
        }
        let sha256 = SHA256.hex(of: bytes) ?? ""
        guard sha256 == file.sha256 else {
            throw .mismatch(file: name, "SHA256 \(sha256) where Release says \(file.sha256)")
        }
    }
}
