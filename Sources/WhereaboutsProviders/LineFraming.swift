/// Cuts a byte stream into lines as ``ReconnectingLineStream`` reads it, in chunks of any size; each connection
/// starts with a fresh value, so a line cut short by a lost connection never joins the next connection's first.
public protocol LineFraming {
    /// Adds a chunk of the stream; returns the lines it completed, in order, without terminators.
    mutating func append(_ chunk: some Sequence<UInt8>) -> [[UInt8]]
}

/// NMEA sentences: a line ends at CR or LF, a `$` starts one, and over-long lines are dropped.
extension NMEALineSplitter: LineFraming {}
