/// `[network]`, `[wifi]` and `[ip]`: positioning through an Ichnaea-compatible web service (beaconDB by default).
///
/// `[wifi]` and `[ip]` take GeoClue 2.8's keys, so a GeoClue configuration carries over. `[network] enable=false`
/// (a Whereabouts addition) turns both off in one line, whatever their own sections say: nothing is then sent to
/// any server.
public struct NetworkPositioningConfig: Sendable, Equatable {
    /// GeoClue 2.8's default geolocate URL: beaconDB.
    public static let defaultLocateURL = "https://api.beacondb.net/v1/geolocate"
    /// GeoClue 2.8's default submission URL: beaconDB.
    public static let defaultSubmissionURL = "https://api.beacondb.net/v2/geosubmit"

    /// `[network] enable=` (default true): false turns off Wi-Fi and IP positioning and contributing.
    public var enabled: Bool
    /// `[wifi]`.
    public var wifi: WiFiPositioningConfig
    /// `[ip]`.
    public var ip: IPPositioningConfig
    /// `[network] ca-file=` (a Whereabouts addition): a PEM bundle of the certificate authorities to trust for
    /// HTTPS, for a private Ichnaea server; nil trusts the system's store.
    public var caFile: String?

    public init(
        enabled: Bool = true, wifi: WiFiPositioningConfig = .init(), ip: IPPositioningConfig = .init(),
        caFile: String? = nil
    ) {
        self.enabled = enabled
        self.wifi = wifi
        self.ip = ip
        self.caFile = caFile
    }

    /// True when Wi-Fi positioning runs: `[wifi] enable=true` and `[network]` not off.
    public var wifiEnabled: Bool { enabled && wifi.enabled }
    /// True when IP positioning runs: `[ip] enable=true` with the `ichnaea` method and `[network]` not off.
    public var ipEnabled: Bool { enabled && ip.enabled && ip.method == .ichnaea }
    /// True when fixes are contributed: Wi-Fi positioning on and `[wifi] submit-data=true`.
    public var submitsData: Bool { wifiEnabled && wifi.submitData }

    /// The URL IP positioning asks: `[ip] url=`, else `[wifi] url=` (GeoClue's order), else beaconDB.
    public var ipLocateURL: String { ip.url ?? wifi.url }
}

/// `url` as the log may show it: without its query, where an API key goes (`?key=…`).
public func loggableURL(_ url: String) -> String {
    guard let query = url.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return url }
    return String(url[..<query]) + "?…"
}

/// `[wifi]`: Wi-Fi positioning and contributing, with GeoClue's keys.
public struct WiFiPositioningConfig: Sendable, Equatable {
    /// `enable=`. Off unless the file says so, as for every Whereabouts source.
    public var enabled: Bool
    /// `url=`: the Ichnaea-compatible geolocate URL (an API key goes in its query, `?key=`).
    public var url: String
    /// `submit-data=` (default false): contribute satellite fixes and the access points seen there.
    public var submitData: Bool
    /// `submission-url=`: where contributions go (`/v2/geosubmit`).
    public var submissionURL: String
    /// `submission-nick=` (default `geoclue`, as GeoClue's): sent as `X-Nickname`; empty sends none.
    public var submissionNick: String
    /// `ignore-moving-networks=` (ours, default true): vehicles' networks and phones' hotspots are neither sent nor
    /// learned (``MovingNetworks``).
    public var ignoresMovingNetworks = true
    /// `moving-networks=` (ours): more vehicle networks, by name, separated by `;`.
    public var movingNetworks: [String] = []

    /// The access points Wi-Fi positioning may use, as these keys say.
    public var selection: AccessPointSelection {
        AccessPointSelection(movingNetworks: ignoresMovingNetworks ? MovingNetworks(configured: movingNetworks) : nil)
    }

    public init(
        enabled: Bool = false, url: String = NetworkPositioningConfig.defaultLocateURL, submitData: Bool = false,
        submissionURL: String = NetworkPositioningConfig.defaultSubmissionURL, submissionNick: String = "geoclue"
    ) {
        self.enabled = enabled
        self.url = url
        self.submitData = submitData
        self.submissionURL = submissionURL
        self.submissionNick = submissionNick
    }
}

/// `[ip]`: positioning from the machine's public IP address, at city level, with GeoClue 2.8's keys.
public struct IPPositioningConfig: Sendable, Equatable {
    /// `method=`: how the position is found.
    public enum Method: Sendable, Equatable {
        /// `ichnaea` (GeoClue's default): an empty geolocate query, answered from the address it comes from.
        case ichnaea
        /// Another of GeoClue's methods (`gmaps`, `reallyfreegeoip`): scraping third-party pages, which
        /// Whereabouts does not do; the source stays off and the daemon says so.
        case unsupported(String)
    }

    /// `enable=`. Off unless the file says so.
    public var enabled: Bool
    /// `method=`.
    public var method: Method
    /// `url=`; nil asks `[wifi] url=`.
    public var url: String?
    /// `accuracy=`: the radius in metres to report instead of the server's; nil keeps the server's.
    public var accuracy: Double?
    /// `through-vpn=` (ours, default false): look up even while traffic to the Internet goes through a tunnel,
    /// whose far end's address the service would place.
    public var asksThroughTunnels = false

    public init(enabled: Bool = false, method: Method = .ichnaea, url: String? = nil, accuracy: Double? = nil) {
        self.enabled = enabled
        self.method = method
        self.url = url
        self.accuracy = accuracy
    }
}
