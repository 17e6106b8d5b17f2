/// The access points that travel with their users, so they say nothing about where the machine is: a train's, a
/// bus's or an aircraft's network, and a phone's hotspot. A service that places them where they were last seen gives
/// a fix far from the truth with a small accuracy, and a cache that learns places learns the wrong ones.
/// ``AccessPointSelection`` keeps them out of queries, the cache and learning.
///
/// An access point is taken as moving when
/// 1. its SSID is one of ``vehicleNetworks`` or of the configuration's own (`[wifi] moving-networks=`), compared
///    exactly, as bytes;
/// 2. its SSID contains one of ``hotspotNames``, the names phones give their hotspots by default (ASCII letters
///    compared without regard to case);
/// 3. its BSSID is locally administered (the random addresses phones give their hotspots) and its SSID contains one
///    of ``hotspotWords``, words that also name fixed networks, which keep their maker's global address. A locally
///    administered BSSID alone does not make an access point moving: routers give their second and third networks
///    such addresses.
public struct MovingNetworks: Sendable, Equatable {
    /// Networks on trains, buses, ferries and aircraft, by their SSID.
    public static let vehicleNetworks: [String] = [
        // Trains
        "WIFIonICE", "WIFI@DB", "WiFi@DB", "RRX Hotspot", "agilis-Wifi", "FlixTrain Wi-Fi", "OEBB", "svciob",
        "CDWiFi", "MAVSTART-WIFI", "_SNCF_WIFI_INOUI", "_SNCF_WIFI_INTERCITES", "_WIFI_LYRIA", "OUIFI",
        "NormandieTrainConnecte", "THALYSNET", "KEOLIS Nederland", "SJ", "CrossCountryWiFi", "GWR WiFi",
        "Amtrak_WiFi",
        // Buses and ferries
        "FlixBus Wi-Fi", "FlixBux", "Vestische WLAN", "Bluebridge WiFi",
        // Aircraft
        "FlyNet", "Telekom_FlyNet", "Austrian FlyNet", "Air Canada", "ACWiFi", "ACWiFi.com", "AegeanWiFi",
        "Cathay Pacific", "AirNZ_InflightWiFi", "KrisWorld", "saswifi", "SWISS Connect", "Edelweiss Entertainment",
        "gogoinflight", "United_Wi-Fi", "DeltaWiFi.com",
    ]
    /// What a phone's hotspot is called unless its owner renames it.
    public static let hotspotNames: [String] = ["iPhone", "iPad", "AndroidAP"]
    /// Words in phones' default hotspot names that fixed networks may carry too: moving only with a locally
    /// administered BSSID.
    public static let hotspotWords: [String] = [
        "Galaxy", "Pixel", "OnePlus", "Redmi", "Xiaomi", "POCO", "Xperia", "HUAWEI", "HONOR", "Nokia", "moto",
        "Android", "Phone", "Hotspot",
    ]
    /// The most SSIDs the configuration may add.
    public static let maximumConfigured = 64
    /// The longest SSID, in bytes (IEEE 802.11).
    public static let maximumSSIDLength = 32

    /// The configuration's own vehicle networks (`[wifi] moving-networks=`), added to ``vehicleNetworks``.
    public let configured: [String]
    private let vehicles: Set<[UInt8]>
    private static let names = hotspotNames.map(lowercasedASCII)
    private static let words = hotspotWords.map(lowercasedASCII)

    /// The built-in lists and `configured`, more vehicle networks.
    public init(configured: [String] = []) {
        self.configured = configured
        vehicles = Set((Self.vehicleNetworks + configured).map { Array($0.utf8) })
    }

    /// Whether `accessPoint` travels with its users.
    public func isMoving(_ accessPoint: AccessPoint) -> Bool {
        if vehicles.contains(accessPoint.ssid) { return true }
        let ssid = accessPoint.ssid.map(Self.lowercased)
        if Self.names.contains(where: { ssid.contains(run: $0) }) { return true }
        return accessPoint.bssid.firstOctet & 0x02 != 0 && Self.words.contains { ssid.contains(run: $0) }
    }

    public static func == (lhs: MovingNetworks, rhs: MovingNetworks) -> Bool { lhs.configured == rhs.configured }

    private static func lowercasedASCII(_ text: String) -> [UInt8] { text.utf8.map(lowercased) }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }
}

extension Array where Element == UInt8 {
    /// True when `needle` occurs in these bytes as a contiguous run (an empty one occurs everywhere).
    func contains(run needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { start in
            self[start..<start + needle.count].elementsEqual(needle)
        }
    }
}
