/// The modem's sources through ModemManager, each turned on by its GeoClue group's `enable=true` and off otherwise.
public struct ModemConfig: Sendable, Equatable {
    /// `[modem-gps] enable=`: the modem's satellite receiver, for exact clients.
    public var gnssEnabled: Bool
    /// `[3g] enable=`: the serving cell, looked up like Wi-Fi (needs `[network]`), for neighbourhood clients.
    public var cellEnabled: Bool
    /// `[cdma] enable=`: the CDMA base station's own position, for neighbourhood clients.
    public var cdmaEnabled: Bool
    /// `[modem-gps]`'s assisted GNSS keys (Whereabouts additions).
    public var assistance: GNSSAssistanceConfig

    /// A configuration with the sources given on; all off by default.
    public init(
        gnssEnabled: Bool = false, cellEnabled: Bool = false, cdmaEnabled: Bool = false,
        assistance: GNSSAssistanceConfig = .init()
    ) {
        self.gnssEnabled = gnssEnabled
        self.cellEnabled = cellEnabled
        self.cdmaEnabled = cdmaEnabled
        self.assistance = assistance
    }
}

/// `[modem-gps]`'s keys for assisting the modem's receiver: the predicted orbits (XTRA) downloaded and injected,
/// and a SUPL server, which only an administrator sets.
public struct GNSSAssistanceConfig: Sendable, Equatable {
    /// `assistance=` (default true): download the predicted orbits for modems that take them.
    public var enabled: Bool
    /// `assistance-servers=`: the URLs to download from instead of those the modem lists, in order; nil: the
    /// modem's.
    public var servers: [String]?
    /// `assistance-metered=` (default false): download also over a connection NetworkManager calls metered.
    public var overMeteredConnection: Bool
    /// `supl-server=HOST:PORT`: set on the modems with `SetSuplServer`; nil (the default) sets none.
    public var suplServer: String?

    /// The defaults: assistance on, from the modem's servers, never over a metered connection, no SUPL server.
    public init(
        enabled: Bool = true, servers: [String]? = nil, overMeteredConnection: Bool = false, suplServer: String? = nil
    ) {
        self.enabled = enabled
        self.servers = servers
        self.overMeteredConnection = overMeteredConnection
        self.suplServer = suplServer
    }
}
