/// Cuts a byte stream, as it arrives from a serial port, socket or file in chunks of any size, into lines.
///
/// A line ends at CR or LF (empty lines are skipped), and a `$` always starts a new line: `$` cannot occur
/// inside a sentence, so a sentence cut short by lost bytes does not swallow the one after it. The cut-off
/// fragment is still returned, and fails to decode.
///
/// The buffer is bounded. A line that grows beyond `maximumLineLength` bytes is discarded, counted in
/// ``discardedLineCount``, and the splitter skips to the next `$`, CR or LF to resynchronize.
public struct NMEALineSplitter: Sendable {
    /// The longest line kept, in bytes, terminator excluded.
    public let maximumLineLength: Int
    /// How many over-long lines were discarded so far.
    public private(set) var discardedLineCount = 0

    private var buffer: [UInt8] = []
    private var isDiscarding = false

    /// A splitter keeping lines of at most `maximumLineLength` bytes (which must be positive).
    public init(maximumLineLength: Int = NMEASentence.maximumLength) {
        precondition(maximumLineLength > 0, "maximumLineLength must be positive")
        self.maximumLineLength = maximumLineLength
        buffer.reserveCapacity(maximumLineLength)
    }

    /// Adds a chunk of the stream; returns the lines it completed, in order, without terminators.
    public mutating func append(_ chunk: some Sequence<UInt8>) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for byte in chunk {
            switch byte {
            case 0x0A, 0x0D:
                flush(into: &lines)
                isDiscarding = false
            case UInt8(ascii: "$"):
                flush(into: &lines)
                isDiscarding = false
                buffer.append(byte)
            default:
                if isDiscarding { continue }
                if buffer.count == maximumLineLength {
                    buffer.removeAll(keepingCapacity: true)
                    isDiscarding = true
                    discardedLineCount += 1
                } else {
                    buffer.append(byte)
                }
            }
        }
        return lines
    }

    /// Ends the stream; returns its last line if the stream did not end with a terminator.
    public mutating func finish() -> [UInt8]? {
        var lines: [[UInt8]] = []
        flush(into: &lines)
        isDiscarding = false
        return lines.first
    }

    private mutating func flush(into lines: inout [[UInt8]]) {
        guard !buffer.isEmpty else { return }
        lines.append(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}
