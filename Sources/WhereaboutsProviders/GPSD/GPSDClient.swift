import WhereaboutsCore

/// How the gpsd provider reaches gpsd: libgps in the daemon (the GPSD module's `LibGPSClient`, the only code that
/// touches libgps), anything that speaks gpsd's JSON protocol in a test.
public protocol GPSDClient {
    /// What connects to gpsd at `host`:`port` and asks for its reports (`?WATCH`, and at once `?POLL;`).
    func opener(host: String, port: UInt16) -> any StreamOpener
    /// A reader of one connection's reports, from its first line.
    func reportReader() -> any GPSDReportDecoding
}

/// The fixes in one gpsd connection's reports, one report (a line) at a time.
public protocol GPSDReportDecoding {
    /// The new fix `line` carries; nil when it carries none or the one before again. `receivedAt` stands in for a
    /// missing time.
    mutating func fix(from line: [UInt8], receivedAt: WallTime) -> Fix?
    /// The satellites the last line listed (a SKY with its `satellites`), once; nil when it listed none.
    mutating func takeSky() -> [Satellite]?
}

extension GPSDReportDecoding {
    public mutating func takeSky() -> [Satellite]? { nil }
}
