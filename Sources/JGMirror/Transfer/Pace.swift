import CCurl

/// How much one ranged request of a segment asks for.
///
/// A connection fetches its range as a run of pieces over the same kept-alive
/// connection. Short pieces let work stealing take over the tail of a range without
/// aborting the request in flight (which would cost the connection), and they take
/// the burst that servers limiting each response (nginx `limit_rate`) grant every
/// new request. Each piece boundary costs one round trip of idle time, so a piece is
/// grown until that round trip is under 1/32 of the time the piece takes to arrive.
enum Pace {
    /// The piece size on a fast, near link, and the size before anything was measured.
    static let basePiece: Int64 = 4 << 20
    /// Never more per request, so stealing stays cheap on any link.
    static let maxPiece: Int64 = 64 << 20

    /// The next piece size, from the timings of a request that delivered `bytes`.
    static func pieceSize(after easy: CurlEasy, bytes: Int64) -> Int64 {
        let roundTrip = easy.seconds(CURLINFO_STARTTRANSFER_TIME_T) - easy.seconds(CURLINFO_PRETRANSFER_TIME_T)
        let receiving = easy.seconds(CURLINFO_TOTAL_TIME_T) - easy.seconds(CURLINFO_STARTTRANSFER_TIME_T)
        return pieceSize(bytes: bytes, receiving: receiving, roundTrip: roundTrip)
    }

    static func pieceSize(bytes: Int64, receiving: Double, roundTrip: Double) -> Int64 {
        guard bytes >= 64 << 10, receiving > 0, roundTrip > 0 else { return basePiece }
        let bytesPerSecond = Double(bytes) / receiving
        let wanted = bytesPerSecond * roundTrip * 32
        guard wanted.isFinite else { return maxPiece }
        return min(maxPiece, max(basePiece, Int64(wanted)))
    }
}
