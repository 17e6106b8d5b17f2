import WhereaboutsProviders

/// gpsd through libgps, for the gpsd provider: libgps connects and sends the commands (``GPSDOpener``), the shim's
/// strict parser reads the reports (``GPSDReportReader``).
public struct LibGPSClient: GPSDClient {
    /// The client; libgps is loaded at its first connection.
    public init() {}

    public func opener(host: String, port: UInt16) -> any StreamOpener { GPSDOpener(host: host, port: String(port)) }

    public func reportReader() -> any GPSDReportDecoding { GPSDReportReader() }
}

extension GPSDReportReader: GPSDReportDecoding {}
