import CLZMA
import CZlib

/// The two C decoders' loops: feed input, drain output into the scratch buffer,
/// append it within the limit, turn every status into a thrown error.
extension Decompressor {
    /// Output taken from the decoders at a time.
    static let scratchSize = 1 << 16

    /// Appends `count` bytes of `scratch`, unless that would pass `limit`.
    private func take(_ scratch: UnsafeMutableBufferPointer<UInt8>, _ count: Int) throws(DecompressionError) {
        guard count > 0 else { return }
        guard output.count + count <= limit else { throw .tooLarge(limit: limit) }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<count]))
    }

    func pushXZ(_ input: UnsafeRawBufferPointer, action: lzma_action) throws(DecompressionError) {
        guard let stream = xzStream else { return }
        let scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Self.scratchSize)
        defer { scratch.deallocate() }
        stream.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.pointee.avail_in = input.count
        while true {
            stream.pointee.next_out = scratch.baseAddress
            stream.pointee.avail_out = scratch.count
            let status = lzma_code(stream, action)
            try take(scratch, scratch.count - stream.pointee.avail_out)
            switch status {
            case LZMA_OK:
                // More input to take, output left in the decoder, or (finishing) the end not reached yet.
                if stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0 || action == LZMA_FINISH { continue }
                return
            case LZMA_STREAM_END:
                xzFinished = true
                return
            // liblzma says it twice in a row without progress: the input ended inside a stream.
            case LZMA_BUF_ERROR: throw .truncated
            case LZMA_MEM_ERROR, LZMA_MEMLIMIT_ERROR: throw .memoryLimit
            case LZMA_FORMAT_ERROR: throw .corrupt("not the xz format")
            case LZMA_OPTIONS_ERROR: throw .corrupt("xz options liblzma does not support")
            case LZMA_DATA_ERROR: throw .corrupt("damaged xz data")
            default: throw .corrupt("liblzma status \(status.rawValue)")
            }
        }
    }

    func pushGzip(_ input: UnsafeRawBufferPointer) throws(DecompressionError) {
        guard let stream = gzipStream, let base = input.baseAddress else { return }
        let scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Self.scratchSize)
        defer { scratch.deallocate() }
        // zlib counts input in 32 bits: hand it over in chunks.
        var offset = 0
        while offset < input.count {
            let count = min(input.count - offset, Self.chunkSize)
            stream.pointee.next_in = UnsafeMutablePointer(mutating: (base + offset).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(count)
            try inflateAll(stream, scratch)
            offset += count
        }
    }

    /// Inflates until the input is used up, starting a new member after one ends
    /// (gzip(1) reads concatenated members as one file).
    private func inflateAll(_ stream: UnsafeMutablePointer<z_stream>, _ scratch: UnsafeMutableBufferPointer<UInt8>)
        throws(DecompressionError)
    {
        while true {
            if gzipMemberEnded {
                guard stream.pointee.avail_in > 0 else { return }
                guard inflateReset(stream) == Z_OK else { throw .corrupt("zlib could not start the next member") }
                gzipMemberEnded = false
            }
            stream.pointee.next_out = scratch.baseAddress
            stream.pointee.avail_out = uInt(scratch.count)
            let status = inflate(stream, Z_NO_FLUSH)
            try take(scratch, scratch.count - Int(stream.pointee.avail_out))
            switch status {
            case Z_OK:
                if stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0 { continue }
                return
            case Z_STREAM_END:
                gzipMemberEnded = true
            case Z_BUF_ERROR:
                // No progress possible: zlib needs input that has not come yet.
                if stream.pointee.avail_in == 0 { return }
                throw .corrupt("zlib made no progress")
            case Z_MEM_ERROR: throw .memoryLimit
            case Z_NEED_DICT: throw .corrupt("it asks for a preset dictionary")
            default:
                let reason = stream.pointee.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                throw .corrupt(reason)
            }
        }
    }
}
