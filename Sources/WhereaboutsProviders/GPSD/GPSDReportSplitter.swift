/// Cuts gpsd's stream into its reports, one JSON object a line: a line ends at LF, a CR before it is dropped,
/// empty lines are skipped, and a line longer than ``maximumLength`` is dropped whole, up to its LF.
package struct GPSDReportSplitter: LineFraming {
    /// The longest line kept, in bytes, LF excluded: libgps's own line buffer, twice gpsd's longest report.
    static let maximumLength = 8192

    private var line: [UInt8] = []
    private var isDiscarding = false

    /// A splitter at the start of a stream.
    package init() {}

    package mutating func append(_ chunk: some Sequence<UInt8>) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for byte in chunk {
            if byte == UInt8(ascii: "\n") {
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if !isDiscarding && !line.isEmpty { lines.append(line) }
                line.removeAll(keepingCapacity: true)
                isDiscarding = false
            } else if line.count == Self.maximumLength {
                line.removeAll(keepingCapacity: true)
                isDiscarding = true
            } else if !isDiscarding {
                line.append(byte)
            }
        }
        return lines
    }
}
