import CCurl

/// How much one ranged request of a segment asks for.
///
/// A connection fetches its range as a run of pieces over the same kept-alive
/// connection. Short pieces let work stealing take over the tail of a range without
/// aborting the request in flight (which would cost the connection), and they ride
/// the burst that servers limiting each response grant every new request (nginx
/// `limit_rate` writes up to `sendfile_max_chunk`, 2 MiB, then waits for the rate to
/// catch up; a piece that fits the socket buffer arrives in that first write). Each
/// piece boundary idles one connection for a round trip; with N connections the
/// others keep the link busy, so a piece is grown until that round trip, shared over
/// the item's connections, is under 1/32 of the time the piece takes to arrive.
enum Pace {
    /// The piece size on a fast, near link, and the size before anything was measured.
    static let basePiece: Int64 = 1 << 20
    /// Never more per request, so stealing stays cheap on any link.
    static let maxPiece: Int64 = 64 << 20

    /// What a finished request's timings say about the link.
    struct Timing {
        /// Request sent to first byte.
        var roundTrip: Double
        /// First byte to last.
        var receiving: Double

        init(_ easy: CurlEasy) {
            roundTrip = easy.seconds(CURLINFO_STARTTRANSFER_TIME_T) - easy.seconds(CURLINFO_PRETRANSFER_TIME_T)
            receiving = easy.seconds(CURLINFO_TOTAL_TIME_T) - easy.seconds(CURLINFO_STARTTRANSFER_TIME_T)
        }
    }

    /// The next piece size after a request that delivered `bytes` in `receiving`
    /// seconds, on a link with `roundTrip`, for an item fetched over `connections`.
    static func pieceSize(bytes: Int64, receiving: Double, roundTrip: Double, connections: Int = 1) -> Int64 {
        guard bytes >= 64 << 10, receiving > 0, roundTrip > 0 else { return basePiece }
        let bytesPerSecond = Double(bytes) / receiving
        let wanted = bytesPerSecond * roundTrip * 32 / Double(max(1, connections))
        guard wanted.isFinite else { return maxPiece }
        return min(maxPiece, max(basePiece, Int64(wanted)))
    }
}
