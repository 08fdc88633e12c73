/// What a response head means for an item, decided without curl: the head and what
/// the item knows go in, a decision comes out (docs/engine.md#connections-and-ranges).
/// `HeadHandler` carries the decision out.
enum ResponseJudge {
    /// What the item knows when a response head arrives.
    struct Known: Equatable {
        /// The request was for a `file:` URL (no status line; `fileLength` from libcurl).
        var isFileSource = false
        var fileLength: Int64?
        /// The first byte the request asked for.
        var requestedStart: Int64 = 0
        /// The request carried a `Range` header.
        var sentRange = false
        /// The file's length, once a response told it (or resume state did).
        var length: Int64?
        /// The validators the item's bytes so far belong to.
        var validators = Validators()
        /// The request went to the source the validators came from.
        var fromValidatorSource = true
        /// Bytes of the file exist already (this run or an earlier one).
        var hasData = false
        /// The request carried the item's `If-None-Match` / `If-Modified-Since`.
        var conditional = false
    }

    /// The verdict on one response head.
    enum Decision: Equatable {
        /// 206 for the asked range: `length` is the file's, `rangeEnd` where this body ends.
        case partial(length: Int64, rangeEnd: Int64?)
        /// 200 with the whole body as the first response; `ranges` says whether the
        /// rest may be fetched by range.
        case whole(length: Int64?, ranges: Bool)
        /// 416 to a first range: the file is empty.
        case empty
        /// 200 with the whole body to a range request, with the validators already
        /// known: the same file, but ranges refused for now (Apache does so while an
        /// ETag is weak). Fetch it as a single stream from this response.
        case singleStream(String)
        /// The remote changed: start over, keeping this full-body response.
        case restartStream(String)
        /// The remote changed: start over with a new first request.
        case restartFresh(String)
        /// A redirect: ask again at this URL once this request ends.
        case follow(String)
        /// This request failed; the connection retries or moves on.
        case reject(TransferError)
        /// `304` to the request's conditions: the file on disk is current.
        case notModified
    }

    /// Judges `head`, the response to a request for `url`, given what is `known`;
    /// `redirectTarget` is where libcurl resolved a `Location` to.
    static func judge(_ head: ResponseHead, _ known: Known, url: String, redirectTarget: String? = nil) -> Decision {
        var head = head
        if known.isFileSource {
            head.status = 200
            head.contentLength = known.fileLength
        }
        if head.status == 304, known.conditional, !known.hasData { return .notModified }
        if (300...399).contains(head.status), head.status != 304, let redirectTarget { return .follow(redirectTarget) }
        switch head.status {
        case 206:
            guard let start = head.rangeStart, let length = head.rangeTotal, start == known.requestedStart,
                head.rangeEnd.map({ $0 > start && $0 <= length }) ?? true
            else {
                return .reject(
                    .retryable(
                        .protocolViolation, "server answered a different byte range than asked (\(Redactor.redactURL(url)))"))
            }
            if let total = known.length, total != length {
                return .restartFresh("remote length changed from \(total) to \(length) bytes; restarted from zero")
            }
            if known.fromValidatorSource, known.length != nil, known.validators.conflicts(with: head.validators) {
                return .restartFresh("remote file changed (validator differs); restarted from zero")
            }
            return .partial(length: length, rangeEnd: head.rangeEnd)
        case 200:
            if known.hasData {
                let sameLength = head.contentLength == nil || head.contentLength == known.length
                if known.sentRange, known.fromValidatorSource, sameLength, known.validators.sameVersion(as: head.validators) {
                    return .singleStream(
                        "server answered a range request with the whole file (validators unchanged); fetched as one stream")
                }
                // A server that does not even announce ranges refuses them rather than
                // shows a change (without validators nothing tells the two apart).
                if known.sentRange, !head.acceptsRanges {
                    return .singleStream("server ignored the range request; restarted from zero")
                }
                return .restartStream("remote file changed (If-Range answered with the whole file); restarted from zero")
            }
            return .whole(length: head.contentLength, ranges: !known.sentRange && head.acceptsRanges && !known.isFileSource)
        case 416:
            if !known.hasData, known.requestedStart == 0, head.rangeTotal == 0 { return .empty }
            if known.hasData { return .restartFresh("remote file shrank (416 to a saved range); restarted from zero") }
            return .reject(.http(416, url: url))
        default:
            return .reject(.http(head.status, url: url, retryAfter: head.retryAfter))
        }
    }
}
