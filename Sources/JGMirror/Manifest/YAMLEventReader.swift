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
    /// A scalar's text, and the core tag written before it (`!!str 3`), if any.
    case scalar(String, tag: YAMLTag?)
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

/// An explicit tag of YAML's core schema on a scalar (docs/manifest.md#values): the
/// manifest takes a tag only where it agrees with what the key expects (`!!int` on a
/// number), and no other tag at all.
enum YAMLTag: String, Equatable, CaseIterable {
    case str, int, float, bool, null

    /// As a manifest writes it: `!!str`.
    var spelling: String { "!!" + rawValue }

    /// The core tag libyaml resolved `tag` to (`tag:yaml.org,2002:str`), or nil.
    init?(resolved tag: String) {
        let prefix = "tag:yaml.org,2002:"
        guard tag.hasPrefix(prefix) else { return nil }
        self.init(rawValue: String(tag.dropFirst(prefix.count)))
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

    /// Reads from the file at `path`, which must be UTF-8: libyaml would read UTF-16 too.
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
        var head = [UInt8](repeating: 0, count: 4)
        let read = fread(&head, 1, head.count, handle)
        rewind(handle)
        if let encoding = Self.otherEncoding(head.prefix(read)) {
            fclose(handle)
            throw ManifestError(
                file: path, location: SourceLocation(line: 1, column: 1),
                message: "the manifest must be UTF-8, but it starts with the byte order mark of \(encoding); save it as UTF-8")
        }
        file = handle
        parser = .allocate(capacity: 1)
        guard yaml_parser_initialize(parser) == 1 else {
            fclose(handle)
            parser.deallocate()
            throw ManifestError(file: path, location: nil, message: "cannot initialise the YAML parser")
        }
        // libyaml decodes UTF-16 when a byte order mark says so: refused above.
        yaml_parser_set_input_file(parser, handle)
    }

    /// The encoding other than UTF-8 whose byte order mark `head` starts with.
    static func otherEncoding(_ head: ArraySlice<UInt8>) -> String? {
        let marks: [([UInt8], String)] = [
            ([0x00, 0x00, 0xFE, 0xFF], "UTF-32BE"), ([0xFF, 0xFE, 0x00, 0x00], "UTF-32LE"), ([0xFE, 0xFF], "UTF-16BE"),
            ([0xFF, 0xFE], "UTF-16LE"),
        ]
        return marks.first { head.starts(with: $0.0) }?.1
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
        let tag = try self.tag(of: &event, at: location)
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
            converted = .scalar(text, tag: tag)
        default:
            throw ManifestError(file: sourceName, location: location, message: "unexpected YAML event")
        }
        return (converted, location)
    }

    /// The core tag of a scalar, nil when it has none; throws for a tag the manifest
    /// takes nowhere (`!foo`, `!!binary`, `!`), and for a mapping or list tagged other
    /// than `!!map` or `!!seq`.
    private func tag(of event: inout yaml_event_t, at location: SourceLocation) throws(ManifestError) -> YAMLTag? {
        guard let written = jg_event_tag(&event).map({ String(cString: $0) }) else { return nil }
        let core = YAMLTag(resolved: written)
        let collection =
            event.type == YAML_MAPPING_START_EVENT
            ? "tag:yaml.org,2002:map"
            : event.type == YAML_SEQUENCE_START_EVENT ? "tag:yaml.org,2002:seq" : nil
        if let collection, written == collection { return nil }
        guard collection == nil, let core else {
            let shown = written.hasPrefix("tag:yaml.org,2002:") ? "!!" + written.dropFirst(18) : written
            throw ManifestError(
                file: sourceName, location: location,
                message:
                    "the YAML tag '\(Rules.printable(String(shown)))' is not taken here; write the value without a tag (a manifest's values are plain)"
            )
        }
        return core
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
