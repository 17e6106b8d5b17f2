import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// Reading modems' properties and `Location` entries, checked for type, and passing the entries on.
extension ModemManagerClient {
    func apply(
        modemProperties properties: [String: DBusValue], to modem: inout ModemRecord, at path: ObjectPath
    ) {
        if let value = properties["State"] {
            if let state = value.int32 { modem.state = state } else { badValue("\(path): State is \(value.signature)") }
        }
        if let value = properties["AccessTechnologies"] {
            if let bits = value.uint32 {
                modem.accessTechnologies = AccessTechnologies(rawValue: bits)
            } else {
                badValue("\(path): AccessTechnologies is \(value.signature)")
            }
        }
    }

    /// Applies Location interface properties; returns the `Location` keys it read.
    func apply(
        locationProperties properties: [String: DBusValue], to location: inout LocationRecord, at path: ObjectPath
    ) -> Set<UInt32> {
        for (name, value) in properties {
            switch name {
            case "Capabilities", "Enabled":
                guard let bits = value.uint32 else {
                    badValue("\(path): \(name) is \(value.signature)")
                    continue
                }
                if name == "Capabilities" {
                    location.capabilities = ModemLocationSources(rawValue: bits)
                } else {
                    location.enabled = ModemLocationSources(rawValue: bits)
                    location.ours.formIntersection(location.enabled)
                }
            case "SupportedAssistanceData":
                if let bits = value.uint32 {
                    location.supportedAssistanceData = bits
                } else {
                    badValue("\(path): \(name) is \(value.signature)")
                }
            case "AssistanceDataServers":
                if case .array(element: "s", let urls) = value {
                    // Only what a kept file may name: the first few plain URLs of a bounded length.
                    location.assistanceDataServers = Array(
                        urls.compactMap(\.string).filter(PredictedOrbitCache.isPlainURL)
                            .prefix(PredictedOrbitCache.maximumServers))
                } else {
                    badValue("\(path): \(name) is \(value.signature)")
                }
            case "SignalsLocation":
                if let flag = value.bool {
                    location.signals = flag
                    location.turnedSignalsOn = location.turnedSignalsOn && flag
                } else {
                    badValue("\(path): \(name) is \(value.signature)")
                }
            default:
                continue
            }
        }
        guard let value = properties["Location"] else { return [] }
        guard case .dictionary(key: "u", value: "v", let entries) = value else {
            badValue("\(path): Location is \(value.signature), not a{uv}")
            return []
        }
        var keys: Set<UInt32> = []
        var values: [UInt32: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.uint32 else { continue }
            values[key] = entry.value.unwrapped
            keys.insert(key)
        }
        location.lastValues = values
        return keys
    }

    /// Passes the `Location` entries among `changed` on to the observers, checked for type.
    func passOn(_ values: [UInt32: DBusValue], from path: ObjectPath, changed: Set<UInt32>) {
        guard let modem = modems[path] else { return }
        for key in changed.sorted() {
            guard let value = values[key] else { continue }
            switch ModemLocationSources(rawValue: key) {
            case .threeGPPCell:
                guard let text = value.string else {
                    badValue("\(path): 3GPP location is \(value.signature)")
                    continue
                }
                emit(.location(.servingCell(text, modem.accessTechnologies, modem: path.rawValue)))
            case .gpsNMEA:
                guard let text = value.string else {
                    badValue("\(path): NMEA location is \(value.signature)")
                    continue
                }
                emit(.location(.nmea(text, modem: path.rawValue)))
            case .cdmaBaseStation:
                guard let fields = value.stringKeyedEntries, let latitude = fields["latitude"]?.double,
                    let longitude = fields["longitude"]?.double
                else {
                    badValue("\(path): CDMA base station location is \(value.signature)")
                    continue
                }
                emit(.location(.cdmaBaseStation(latitude: latitude, longitude: longitude, modem: path.rawValue)))
            default:
                continue
            }
        }
    }

    func badValue(_ what: String) {
        badValues += 1
        if badValues == 1 || badValues.isMultiple(of: 100) {
            logger.warning("modems: ignoring \(what) from ModemManager; \(badValues) bad values so far")
        }
    }
}
