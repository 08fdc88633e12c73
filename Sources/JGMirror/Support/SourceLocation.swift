/// A 1-based line and column in a manifest file, as editors count them.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    // 32 bits each: every manifest item carries several of these.
    private var storedLine: UInt32
    private var storedColumn: UInt32

    /// 1-based line number.
    public var line: Int {
        get { Int(storedLine) }
        set { storedLine = UInt32(clamping: newValue) }
    }
    /// 1-based column number.
    public var column: Int {
        get { Int(storedColumn) }
        set { storedColumn = UInt32(clamping: newValue) }
    }

    public init(line: Int, column: Int) {
        storedLine = UInt32(clamping: line)
        storedColumn = UInt32(clamping: column)
    }

    public var description: String { "\(line):\(column)" }
}
