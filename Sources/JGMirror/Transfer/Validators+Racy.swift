import Foundation

/// Racy validators: git's racy-timestamp problem over HTTP (docs/state.md#racy-validators).
///
/// nginx's and Apache's `Last-Modified` and ETags are made of the file's modification
/// time in whole seconds (and its size). A copy taken in the same second as the file's
/// last change cannot tell a second change in that second: rewritten with the same
/// size, the file keeps both validators, and a conditional request for it is answered
/// `304` for ever. Such validators serve the run that got them (`If-Range` between its
/// own requests) but are never kept for a later run's conditions: the next run fetches
/// the file again, unconditionally, until a copy taken later than the change settles it.
extension Validators {
    /// The resolution of HTTP dates, and of the file times servers make validators from.
    static let resolution = 1.0

    /// Whether these validators, from a response the server made at `fetchedAt`
    /// (seconds since the epoch: its `Date`, else the local clock), prove nothing about
    /// a change in that second: the response came less than `resolution` after the
    /// `Last-Modified` (or that date does not parse); or, without a `Last-Modified`, the
    /// ETag is weak (Apache marks a file changed within the last second so) or made of a
    /// modification time (nginx's `"mtime-size"`, Apache's `"size-mtime"`).
    func proveNothing(fetchedAt: Double) -> Bool {
        if let lastModified {
            guard let modified = HTTPDate.parse(lastModified) else { return true }
            return fetchedAt - Double(modified) < Self.resolution
        }
        guard let etag else { return false }
        return etag.hasPrefix("W/") || Self.isTimeShaped(etag)
    }

    /// These validators, marked `racy` when they prove nothing (`proveNothing`) for a
    /// response whose `Date` was `date` (nil: none, or unreadable), received at `now`.
    func judged(date: String?, now: Double = Date().timeIntervalSince1970) -> Validators {
        var judged = self
        judged.racy = proveNothing(fetchedAt: date.flatMap(HTTPDate.parse).map(Double.init) ?? now)
        return judged
    }

    /// What a later run may send as conditions: nothing when `racy`.
    var lasting: Validators { racy ? Validators() : self }

    /// An ETag made of dash-separated hex numbers: nginx's `"5f3a2b1c-1a2b"` (mtime,
    /// size), Apache's `"1a2b-5af1c2d3e4f50"` (size, mtime in microseconds) or
    /// `"3e8-1a2b-5af1c2d3e4f50"` (with the inode).
    static func isTimeShaped(_ etag: String) -> Bool {
        let opaque = etag.hasPrefix("W/") ? etag.dropFirst(2) : Substring(etag)
        guard opaque.count > 2, opaque.hasPrefix("\""), opaque.hasSuffix("\"") else { return false }
        let parts = opaque.dropFirst().dropLast().split(separator: "-", omittingEmptySubsequences: false)
        return (2...3).contains(parts.count)
            && parts.allSatisfy { part in (1...16).contains(part.count) && part.allSatisfy(\.isHexDigit) }
    }
}
