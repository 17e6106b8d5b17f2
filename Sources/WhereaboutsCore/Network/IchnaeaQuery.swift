/// Request bodies for an Ichnaea-compatible service (Mozilla Ichnaea, beaconDB), as UTF-8 JSON.
///
/// Queries carry only what the answer needs: beaconDB reads `macAddress` and `signalStrength` of each access
/// point and nothing else for a position, so network names, ages and frequencies stay on the machine.
public enum IchnaeaQuery {
    /// The `/v1/geolocate` body for a Wi-Fi position:
    /// `{"considerIp":false,"fallbacks":{"ipf":false,"lacf":false},"wifiAccessPoints":[{"macAddress":"…",
    /// "signalStrength":-60},…]}`, access points in the order given (``AccessPointSelection`` orders them
    /// strongest first).
    ///
    /// `considerIp` and both `fallbacks` are off so that a server that cannot place the access points answers
    /// 404 rather than a position from the client's IP address dressed as a Wi-Fi fix.
    public static func wifi(_ usable: [AccessPoint]) -> [UInt8] {
        let accessPoints: [JSONValue] = usable.map { accessPoint in
            [
                "macAddress": .string(accessPoint.bssid.description),
                "signalStrength": .number(Double(accessPoint.signal)),
            ]
        }
        let body: JSONValue = [
            "considerIp": false,
            "fallbacks": ["ipf": false, "lacf": false],
            "wifiAccessPoints": .array(accessPoints),
        ]
        return body.serializedBytes
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
