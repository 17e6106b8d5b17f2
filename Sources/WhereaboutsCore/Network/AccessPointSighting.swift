/// One access point's address and how strongly it was heard: all that comparing scans needs, and all that the
/// position cache keeps (no network names).
public struct AccessPointSighting: Sendable, Hashable {
    /// Its hardware address.
    public var bssid: BSSID
    /// Signal strength in dBm.
    public var signal: Int

    /// Makes a sighting.
    public init(bssid: BSSID, signal: Int) {
        self.bssid = bssid
        self.signal = signal
    }
}

extension AccessPoint {
    /// Its address and signal.
    public var sighting: AccessPointSighting { AccessPointSighting(bssid: bssid, signal: signal) }

    /// Its network name when it is valid UTF-8 (an Ichnaea `ssid` is a JSON string); nil otherwise.
    public var ssidText: String? { String(validating: ssid, as: UTF8.self) }
}
