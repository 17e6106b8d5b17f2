/// The modem's sources through ModemManager, each turned on by its GeoClue group's `enable=true` and off otherwise.
public struct ModemConfig: Sendable, Equatable {
    /// `[modem-gps] enable=`: the modem's satellite receiver, for exact clients.
    public var gnssEnabled: Bool
    /// `[3g] enable=`: the serving cell, looked up like Wi-Fi (needs `[network]`), for neighbourhood clients.
    public var cellEnabled: Bool
    /// `[cdma] enable=`: the CDMA base station's own position, for neighbourhood clients.
    public var cdmaEnabled: Bool

    /// A configuration with the sources given on; all off by default.
    public init(gnssEnabled: Bool = false, cellEnabled: Bool = false, cdmaEnabled: Bool = false) {
        self.gnssEnabled = gnssEnabled
        self.cellEnabled = cellEnabled
        self.cdmaEnabled = cdmaEnabled
    }
}
