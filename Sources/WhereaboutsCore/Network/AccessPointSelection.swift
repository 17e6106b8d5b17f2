/// Which access points of a scan may leave the machine in a query or a submission, strongest first.
///
/// An access point is left out when
/// 1. its network is hidden: the SSID is empty or all NUL bytes (Ichnaea: hidden networks must not be used);
/// 2. its SSID contains `_nomap` or `_optout` anywhere, compared as bytes and case-sensitively, as beaconDB does
///    (Ichnaea and GeoClue test only for a `_nomap` suffix; containing is the stricter reading);
/// 3. its BSSID is all zeros, or has the group bit (0x01 of the first octet) set, which covers the broadcast
///    address and multicast addresses (Ichnaea rejects `00:00:00:00:00:00`, `ff:ff:ff:ff:ff:ff` and a multicast
///    test address);
/// 4. it travels with its users: a vehicle's network or a phone's hotspot (``movingNetworks``, unless nil), which
///    say where the train or the phone's owner last was, not where the machine is (*ours*: Ichnaea and GeoClue do
///    not leave them out);
/// 5. its signal is outside ``weakestSignal``...``strongestSignal`` (−100…−10 dBm, the range Ichnaea accepts);
///    0, which drivers report for "unknown", is outside it.
///
/// Of the rest, an address seen more than once (scans of several interfaces merged) keeps its strongest
/// sighting (the first of equals); the result is ordered strongest first (equal signals by address) and holds
/// at most ``maximumSent`` access points. A query needs at least ``minimumForQuery`` of them.
public struct AccessPointSelection: Sendable, Equatable {
    /// Why an access point was left out.
    public enum Exclusion: Sendable, Equatable, CustomStringConvertible {
        /// The SSID is empty or all NUL bytes.
        case hiddenNetwork
        /// The SSID contains `_nomap` or `_optout`.
        case optedOut
        /// The BSSID is all zeros.
        case nullAddress
        /// The BSSID is the broadcast address or a multicast one.
        case groupAddress
        /// A vehicle's network or a phone's hotspot (``MovingNetworks``).
        case movingNetwork
        /// The signal is outside −100…−10 dBm (0 means unknown).
        case signalOutOfRange

        /// A human explanation.
        public var description: String {
            switch self {
            case .hiddenNetwork: "hidden network"
            case .optedOut: "the network name opts out of mapping"
            case .nullAddress: "all-zero address"
            case .groupAddress: "broadcast or multicast address"
            case .movingNetwork: "a vehicle's network or a phone's hotspot"
            case .signalOutOfRange: "signal out of range"
            }
        }
    }

    /// Fewer usable access points than this and no Wi-Fi query is made at all (Ichnaea's and beaconDB's privacy
    /// minimum: one access point would locate that network's owner, not the machine).
    public static let minimumForQuery = 2
    /// The weakest signal sent, in dBm.
    public static let weakestSignal = -100
    /// The strongest signal sent, in dBm.
    public static let strongestSignal = -10
    /// The SSID markers by which owners ask that their network not be mapped.
    public static let optOutMarkers: [[UInt8]] = [Array("_nomap".utf8), Array("_optout".utf8)]

    /// The networks that travel with their users, left out; nil keeps them (`[wifi] ignore-moving-networks=false`).
    public var movingNetworks: MovingNetworks?
    /// The most access points kept, the strongest; default 16. A negative value counts as 0.
    public var maximumSent: Int

    /// A selection with the given options.
    public init(movingNetworks: MovingNetworks? = MovingNetworks(), maximumSent: Int = 16) {
        self.movingNetworks = movingNetworks
        self.maximumSent = maximumSent
    }

    /// Why `accessPoint` is left out, or nil when it may be sent.
    public func exclusion(of accessPoint: AccessPoint) -> Exclusion? {
        if accessPoint.ssid.allSatisfy({ $0 == 0 }) { return .hiddenNetwork }
        if AccessPointSelection.optOutMarkers.contains(where: { accessPoint.ssid.contains(run: $0) }) {
            return .optedOut
        }
        if accessPoint.bssid.value == 0 { return .nullAddress }
        if accessPoint.bssid.firstOctet & 0x01 != 0 { return .groupAddress }
        if !(AccessPointSelection.weakestSignal...AccessPointSelection.strongestSignal).contains(accessPoint.signal) {
            return .signalOutOfRange
        }
        if movingNetworks?.isMoving(accessPoint) == true { return .movingNetwork }
        return nil
    }

    /// The access points of `scan` that may be sent: filtered, deduplicated, strongest first, at most
    /// ``maximumSent``.
    public func usable(_ scan: [AccessPoint]) -> [AccessPoint] {
        var strongest: [BSSID: AccessPoint] = [:]
        for accessPoint in scan where exclusion(of: accessPoint) == nil {
            if let kept = strongest[accessPoint.bssid], kept.signal >= accessPoint.signal { continue }
            strongest[accessPoint.bssid] = accessPoint
        }
        let ordered = strongest.values.sorted { $0.signal != $1.signal ? $0.signal > $1.signal : $0.bssid < $1.bssid }
        return Array(ordered.prefix(max(0, maximumSent)))
    }

    /// How many access points of `scan` (counted by address) would be usable but travel with their users.
    public func movingCount(_ scan: [AccessPoint]) -> Int {
        Set(scan.filter { exclusion(of: $0) == .movingNetwork }.map(\.bssid)).count
    }

    /// ``usable(_:)``, or nil when fewer than ``minimumForQuery`` remain and no query may be made.
    public func queryable(_ scan: [AccessPoint]) -> [AccessPoint]? {
        let kept = usable(scan)
        return kept.count >= AccessPointSelection.minimumForQuery ? kept : nil
    }
}
