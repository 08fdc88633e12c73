import CLZMA
import CZlib
import Foundation

/// The compressed forms an apt index is read in: xz (liblzma) and gzip (zlib), or none.
/// Release may list others (`.bz2`, `.lzma`, `.zst`, `.lz4`); those are mirrored as
/// bytes but never read.
enum CompressionFormat: String, Sendable, CaseIterable {
    case xz
    case gzip
    case plain

    /// The file-name suffix of the form: `.xz`, `.gz`, none.
    var suffix: String {
        switch self {
        case .xz: ".xz"
        case .gzip: ".gz"
        case .plain: ""
        }
    }
}

/// Why a compressed index cannot be read.
enum DecompressionError: Error, Equatable, Sendable {
    /// The output would pass `limit` bytes: a decompression bomb, or an index far
    /// larger than its compressed size makes plausible.
    case tooLarge(limit: Int)
    /// The bytes are not a valid stream of the format; the library's reason.
    case corrupt(String)
    /// The input ended inside a stream.
    case truncated
    /// Decoding would need more memory than `Decompressor.memoryLimit`.
    case memoryLimit
    /// The compressed file cannot be read.
    case unreadable(String)

    /// One line for the person at the terminal.
    var message: String {
        switch self {
        case .tooLarge(let limit): "it decompresses to more than \(limit) bytes"
        case .corrupt(let reason): "it is not a valid compressed stream (\(reason))"
        case .truncated: "it ends in the middle of its compressed stream"
        case .memoryLimit: "decoding it would need more than \(Decompressor.memoryLimit >> 20) MiB of memory"
        case .unreadable(let reason): "it cannot be read (\(reason))"
        }
    }
}

/// Turns a compressed index into its bytes a chunk at a time, refusing to produce
/// more than `limit` bytes, so a hostile or damaged file costs at most that much
/// memory. One decompressor reads one file; the C stream it owns is freed with it.
///
/// Not `Sendable`: one thread feeds it, start to end.
final class Decompressor {
    /// liblzma's memory ceiling: xz -9 needs 65 MiB to decode; a header asking for
    /// more is refused instead of allocated.
    static let memoryLimit: UInt64 = 256 << 20
    /// Bytes read from a file at a time.
    static let chunkSize = 1 << 20

    let format: CompressionFormat
    let limit: Int
    /// The bytes produced so far (the decoders' loops in `Decompressor+Streams.swift` append).
    var output: [UInt8] = []
    /// liblzma's stream, for `.xz`.
    let xzStream: UnsafeMutablePointer<lzma_stream>?
    /// zlib's stream, for `.gzip`.
    let gzipStream: UnsafeMutablePointer<z_stream>?
    /// gzip only: the current member has ended; more input starts another one.
    var gzipMemberEnded = false
    /// xz only: LZMA_STREAM_END was seen (after LZMA_FINISH).
    var xzFinished = false

    init(format: CompressionFormat, limit: Int) throws(DecompressionError) {
        self.format = format
        self.limit = limit
        switch format {
        case .plain:
            (xzStream, gzipStream) = (nil, nil)
        case .xz:
            let stream = UnsafeMutablePointer<lzma_stream>.allocate(capacity: 1)
            // All zeroes is LZMA_STREAM_INIT.
            stream.initialize(to: lzma_stream())
            let status = lzma_stream_decoder(stream, Self.memoryLimit, jg_lzma_concatenated())
            guard status == LZMA_OK else {
                stream.deallocate()
                throw status == LZMA_MEM_ERROR ? .memoryLimit : .corrupt("liblzma could not start: \(status.rawValue)")
            }
            (xzStream, gzipStream) = (stream, nil)
        case .gzip:
            // zlib keeps a pointer back to the stream: it must not move, hence the heap.
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard jg_inflate_init_gzip(stream) == Z_OK else {
                stream.deallocate()
                throw .corrupt("zlib could not start")
            }
            (xzStream, gzipStream) = (nil, stream)
        }
    }

    deinit {
        if let xzStream {
            lzma_end(xzStream)
            xzStream.deallocate()
        }
        if let gzipStream {
            inflateEnd(gzipStream)
            gzipStream.deallocate()
        }
    }

    /// Decompresses the next `input` bytes.
    func push(_ input: UnsafeRawBufferPointer) throws(DecompressionError) {
        guard !input.isEmpty else { return }
        switch format {
        case .plain:
            guard output.count + input.count <= limit else { throw .tooLarge(limit: limit) }
            output.append(contentsOf: input)
        case .xz: try pushXZ(input, action: LZMA_RUN)
        case .gzip: try pushGzip(input)
        }
    }

    /// `push` for an array's or a `Data`'s bytes.
    func push(contentsOf bytes: some ContiguousBytes) throws(DecompressionError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(DecompressionError) in try push(raw) } }.get()
    }

    /// Ends the input; throws when it stopped inside a stream. Returns every byte.
    func finish() throws(DecompressionError) -> [UInt8] {
        switch format {
        case .plain: break
        case .xz:
            // With LZMA_CONCATENATED, only LZMA_FINISH tells liblzma that no stream follows.
            try pushXZ(UnsafeRawBufferPointer(start: nil, count: 0), action: LZMA_FINISH)
            guard xzFinished else { throw .truncated }
        case .gzip:
            guard gzipMemberEnded else { throw .truncated }
        }
        return output
    }

    /// The bytes of `data` decompressed.
    static func decompress(_ data: [UInt8], format: CompressionFormat, limit: Int) throws(DecompressionError) -> [UInt8] {
        let decompressor = try Decompressor(format: format, limit: limit)
        try decompressor.push(contentsOf: data)
        return try decompressor.finish()
    }

    /// The file at `path` decompressed, read a chunk at a time.
    static func decompress(path: String, format: CompressionFormat, limit: Int) throws(DecompressionError) -> [UInt8] {
        let decompressor = try Decompressor(format: format, limit: limit)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .unreadable("cannot open \(path)") }
        defer { try? handle.close() }
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: chunkSize) ?? Data() } catch {
                throw .unreadable(error.localizedDescription)
            }
            if chunk.isEmpty { break }
            try decompressor.push(contentsOf: chunk)
        }
        return try decompressor.finish()
    }
}
