/// Request bodies for an Ichnaea-compatible service (Mozilla Ichnaea, beaconDB), as UTF-8 JSON.
///
/// Queries carry only what the answer needs: beaconDB reads `macAddress` and `signalStrength` of each access
/// point and nothing else for a position, so network names, ages and frequencies stay on the machine; of a cell
/// it reads the radio, the codes of country, network and area, the cell id and a scrambling code, which
/// ModemManager does not give.
public enum IchnaeaQuery {
    /// The `/v1/geolocate` body for a Wi-Fi position:
    /// `{"considerIp":false,"fallbacks":{"ipf":false,"lacf":false},"wifiAccessPoints":[{"macAddress":"…",
    /// "signalStrength":-60},…]}`, access points in the order given (``AccessPointSelection`` orders them
    /// strongest first).
    ///
    /// `considerIp` and both `fallbacks` are off so that a server that cannot place the access points answers
    /// 404 rather than a position from the client's IP address dressed as a Wi-Fi fix.
    public static func wifi(_ usable: [AccessPoint]) -> [UInt8] {
        let body: JSONValue = [
            "considerIp": false,
            "fallbacks": ["ipf": false, "lacf": false],
            "wifiAccessPoints": .array(usable.map(wifiAccessPoint)),
        ]
        return body.serializedBytes
    }

    /// The `/v1/geolocate` body for a position from serving cells and access points in one query; with no cells,
    /// exactly ``wifi(_:)``.
    ///
    /// With cells: `{"cellTowers":[{"cellId":…,"locationAreaCode":…,"mobileCountryCode":…,
    /// "mobileNetworkCode":…,"radioType":"lte"},…],"considerIp":false,"fallbacks":{"ipf":false,"lacf":true},
    /// "wifiAccessPoints":[…]}`.
    ///
    /// * Each cell is sent once, in the order given (two modems may be on the same cell), with the five
    ///   identifiers Ichnaea needs for a cell estimate and nothing else (``ServingCell`` says why); `radioType` is
    ///   per cell, not at the top level, since two modems may be on different radios.
    /// * The access points are sent as ``wifi(_:)`` sends them, but only when there are at least
    ///   ``AccessPointSelection/minimumForQuery``: fewer cannot place the client (Ichnaea and beaconDB need two)
    ///   and would only tell the server about them. GeoClue leaves them out the same way.
    /// * `considerIp` and the `ipf` fallback are off, as for Wi-Fi: a position from the client's IP address is not
    ///   a cell fix. The `lacf` fallback is on: when the service does not know the cell, Ichnaea answers from the
    ///   cell's location area, with `"fallback":"lacf"` and that area's radius as the accuracy (50 to 500 km).
    ///   That is coarse but honest, it comes from where the modem really is, and it is how GeoClue queries (it
    ///   sends no `fallbacks`, so both are on). beaconDB ignores `lacf` and has no area estimate.
    /// * An NR cell makes Mozilla's Ichnaea refuse the whole request (400 `parseError`); beaconDB takes it.
    public static func geolocate(accessPoints usable: [AccessPoint], cells: [ServingCell]) -> [UInt8] {
        guard !cells.isEmpty else { return wifi(usable) }
        var seen: Set<ServingCell> = []
        let towers: [JSONValue] = cells.filter { seen.insert($0).inserted }.map { cell in
            [
                "radioType": .string(cell.radio.ichnaeaName),
                "mobileCountryCode": .number(Double(cell.mobileCountryCode)),
                "mobileNetworkCode": .number(Double(cell.mobileNetworkCode)),
                "locationAreaCode": .number(Double(cell.areaCode)),
                "cellId": .number(Double(cell.cellID)),
            ]
        }
        var body: [String: JSONValue] = [
            "cellTowers": .array(towers),
            "considerIp": false,
            "fallbacks": ["ipf": false, "lacf": true],
        ]
        if usable.count >= AccessPointSelection.minimumForQuery {
            body["wifiAccessPoints"] = .array(usable.map(wifiAccessPoint))
        }
        return JSONValue.object(body).serializedBytes
    }

    /// A `wifiAccessPoints` entry of a geolocate query: the address and the signal, nothing else.
    private static func wifiAccessPoint(_ accessPoint: AccessPoint) -> JSONValue {
        [
            "macAddress": .string(accessPoint.bssid.description),
            "signalStrength": .number(Double(accessPoint.signal)),
        ]
    }

    /// The `/v1/geolocate` body for a position from the client's IP address alone: `{}`.
    public static func ip() -> [UInt8] { JSONValue.object([:]).serializedBytes }

    /// The `/v2/geosubmit` body for `items`:
    /// `{"items":[{"timestamp":ms,"position":{"latitude","longitude","accuracy","altitude"?,"speed"?,"heading"?,
    /// "source":"gps"},"wifiAccessPoints":[{"macAddress","ssid","signalStrength","frequency"?,"age"?}]}]}`.
    ///
    /// Optional fields are left out when unknown or not finite; `age` is in whole milliseconds. Access points
    /// whose SSID is not UTF-8 are left out, and so is an item left with fewer than
    /// ``SubmissionItem/minimumAccessPoints`` of them (Ichnaea would discard it); the caller sends nothing when
    /// no item remains.
    public static func submission(items: [SubmissionItem]) -> [UInt8] {
        let reports: [JSONValue] = items.compactMap { item in
            let accessPoints = item.submittableAccessPoints
            guard accessPoints.count >= SubmissionItem.minimumAccessPoints else { return nil }
            var position: [String: JSONValue] = [
                "latitude": .number(item.latitude), "longitude": .number(item.longitude),
                "accuracy": .number(item.accuracy), "source": "gps",
            ]
            if let altitude = item.altitude, altitude.isFinite { position["altitude"] = .number(altitude) }
            if let speed = item.speed, speed.isFinite { position["speed"] = .number(speed) }
            if let heading = item.heading, heading.isFinite { position["heading"] = .number(heading) }
            let wifi: [JSONValue] = accessPoints.map { accessPoint in
                var entry: [String: JSONValue] = [
                    "macAddress": .string(accessPoint.bssid.description),
                    "ssid": .string(accessPoint.ssidText ?? ""),
                    "signalStrength": .number(Double(accessPoint.signal)),
                ]
                if let frequency = accessPoint.frequency, frequency > 0 {
                    entry["frequency"] = .number(Double(frequency))
                }
                if let age = accessPoint.age { entry["age"] = .number(Double(age.wholeNanoseconds / 1_000_000)) }
                return .object(entry)
            }
            return [
                "timestamp": .number(Double(item.timestamp.microseconds / 1_000)),
                "position": .object(position),
                "wifiAccessPoints": .array(wifi),
            ]
        }
        return JSONValue.object(["items": .array(reports)]).serializedBytes
    }
}
