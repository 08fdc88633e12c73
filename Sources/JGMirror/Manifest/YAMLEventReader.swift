import CYAML
import Foundation

/// One libyaml parser event, reduced to what the manifest grammar needs.
enum YAMLEvent: Equatable {
    case streamStart
    case streamEnd
    case documentStart
    case documentEnd
    case mappingStart
    case mappingEnd
    case sequenceStart
    case sequenceEnd
    /// A scalar's text; `plain` is false for quoted and block scalars.
    case scalar(String, plain: Bool)
    /// An alias (`*name`); the manifest grammar does not resolve them.
    case alias

    /// How an error message names this event.
    var noun: String {
        switch self {
        case .mappingStart: "a mapping"
        case .sequenceStart: "a list"
        case .scalar: "a scalar"
        case .alias: "an alias"
        default: "the end of a block"
        }
    }
}

/// Pulls events one at a time from libyaml's event parser.
///
/// The manifest is never held as a tree: memory stays flat however long the file
/// is, and every event carries the line and column it starts at, so each error
/// can name them.
final class YAMLEventReader {
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private var file: UnsafeMutablePointer<FILE>?
    private var input: UnsafeMutableBufferPointer<UInt8>?
    /// The file read from, to find the line of an encoding error libyaml gives as an offset.
    private var path: String?
    /// The name errors use for the source: the manifest's path as given.
    let sourceName: String

    /// Reads from the file at `path`.
    init(path: String) throws(ManifestError) {
        sourceName = path
        self.path = path
        guard let handle = fopen(path, "rb") else {
            let reason = String(cString: strerror(errno))
            throw ManifestError(file: path, location: nil, message: "cannot read manifest: \(reason)")
        }
        var info = stat()
        if fstat(fileno(handle), &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            fclose(handle)
            throw ManifestError(file: path, location: nil, message: "is a folder, not a manifest; give the path of the YAML file")
        }
        file = handle
        parser = .allocate(capacity: 1)
        guard yaml_parser_initialize(parser) == 1 else {
            fclose(handle)
            parser.deallocate()
            throw ManifestError(file: path, location: nil, message: "cannot initialise the YAML parser")
        }
        yaml_parser_set_input_file(parser, handle)
    }

    /// Reads from an in-memory document; `name` stands for the file in errors.
    init(string: String, name: String) throws(ManifestError) {
        sourceName = name
        let bytes = Array(string.utf8)
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = buffer.initialize(from: bytes)
        input = buffer
        parser = .allocate(capacity: 1)
        guard yaml_parser_initialize(parser) == 1 else {
            buffer.deallocate()
            parser.deallocate()
            throw ManifestError(file: name, location: nil, message: "cannot initialise the YAML parser")
        }
        yaml_parser_set_input_string(parser, buffer.baseAddress, bytes.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        if let file { fclose(file) }
        input?.deallocate()
    }

    /// The next event and where it starts; throws the parser's own error with its position.
    func next() throws(ManifestError) -> (YAMLEvent, SourceLocation) {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else {
            throw syntaxError()
        }
        defer { yaml_event_delete(&event) }
        let location = SourceLocation(line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1)
        let converted: YAMLEvent
        switch event.type {
        case YAML_STREAM_START_EVENT: converted = .streamStart
        case YAML_STREAM_END_EVENT: converted = .streamEnd
        case YAML_DOCUMENT_START_EVENT: converted = .documentStart
        case YAML_DOCUMENT_END_EVENT: converted = .documentEnd
        case YAML_MAPPING_START_EVENT: converted = .mappingStart
        case YAML_MAPPING_END_EVENT: converted = .mappingEnd
        case YAML_SEQUENCE_START_EVENT: converted = .sequenceStart
        case YAML_SEQUENCE_END_EVENT: converted = .sequenceEnd
        case YAML_ALIAS_EVENT: converted = .alias
        case YAML_SCALAR_EVENT:
            let length = jg_event_scalar_length(&event)
            let text: String
            if let value = jg_event_scalar_value(&event), length > 0 {
                text = value.withMemoryRebound(to: UInt8.self, capacity: length) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                }
            } else {
                text = ""
            }
            converted = .scalar(text, plain: jg_event_scalar_plain(&event) != 0)
        default:
            throw ManifestError(file: sourceName, location: location, message: "unexpected YAML event")
        }
        return (converted, location)
    }

    private func syntaxError() -> ManifestError {
        let state = parser.pointee
        let problem = state.problem.map { String(cString: $0) } ?? "malformed YAML"
        let mark = state.problem_mark
        if state.error == YAML_READER_ERROR {
            // Encoding errors come with a byte offset, not a mark.
            let offset = Int(state.problem_offset)
            let value = state.problem_value >= 0 ? String(format: " (byte 0x%02X)", state.problem_value) : ""
            return ManifestError(
                file: sourceName, location: location(ofByte: offset),
                message: "the manifest must be UTF-8 text without control characters: \(problem)\(value)")
        }
        var message = "YAML syntax error: \(problem)"
        if let context = state.context.map({ String(cString: $0) }) {
            message += " (\(context))"
        }
        return ManifestError(
            file: sourceName,
            location: SourceLocation(line: Int(mark.line) + 1, column: Int(mark.column) + 1),
            message: message
        )
    }

    /// The line and column (in characters) of the byte at `offset`, read again from
    /// the source: libyaml counts lines only for text it has decoded.
    private func location(ofByte offset: Int) -> SourceLocation? {
        var prefix: [UInt8]
        if let input {
            prefix = Array(input.prefix(offset))
        } else if let path, let handle = FileHandle(forReadingAtPath: path) {
            defer { try? handle.close() }
            prefix = [UInt8]((try? handle.read(upToCount: offset)) ?? Data())
        } else {
            return nil
        }
        guard prefix.count == offset else { return nil }
        var line = 1
        var column = 1
        for byte in prefix {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // one per character, not per byte
            }
        }
        return SourceLocation(line: line, column: column)
    }
}
