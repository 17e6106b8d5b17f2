import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// ModemManager's signals: modems and their interfaces coming and going, and their properties changing.
extension ModemManagerClient {
    func objectsChanged(_ message: Message) {
        guard let owner, message.sender == owner else { return }
        let arguments = message.arguments()
        switch message.member {
        case "InterfacesAdded":
            guard arguments.count == 2, let path = arguments[0].objectPath,
                case .dictionary(key: "s", value: "a{sv}", let interfaces) = arguments[1]
            else { return badValue("InterfacesAdded with (\(message.signature))") }
            added(path, interfaces)
        case "InterfacesRemoved":
            guard arguments.count == 2, let path = arguments[0].objectPath,
                let names = arguments[1].elements?.compactMap(\.string)
            else { return badValue("InterfacesRemoved with (\(message.signature))") }
            removed(path, names)
        default:
            return
        }
        announceAvailability()
    }

    /// Takes the interfaces (`a{sa{sv}}` entries) an object gained.
    func added(_ path: ObjectPath, _ interfaces: [DBusValue.DictEntry]) {
        var modem = modems[path]
        for interface in interfaces {
            guard let name = interface.key.string, let properties = interface.value.stringKeyedEntries else {
                continue
            }
            switch name {
            case Self.modemInterface:
                if modem == nil { logger.info("modems: \(path) appeared") }
                var record = modem ?? ModemRecord()
                apply(modemProperties: properties, to: &record, at: path)
                modem = record
            case Self.locationInterface:
                var record = modem ?? ModemRecord()
                var location = LocationRecord()
                _ = apply(locationProperties: properties, to: &location, at: path)
                record.location = location
                modem = record
            default:
                continue
            }
        }
        guard let modem else { return }
        modems[path] = modem
        if let values = modem.location?.lastValues { passOn(values, from: path, changed: Set(values.keys)) }
        setUp(path)
    }

    private func removed(_ path: ObjectPath, _ names: [String]) {
        guard modems[path] != nil else { return }
        let reported = modems[path]?.location.map { Array($0.lastValues.keys) } ?? []
        if names.contains(Self.modemInterface) {
            modems[path] = nil
            logger.info("modems: \(path) is gone")
            emitGone(reported, at: path)
        } else if names.contains(Self.locationInterface) {
            modems[path]?.location = nil
            emitGone(reported, at: path)
        }
    }

    /// Tells the observers that what the modem at `path` reported for the sources `keys` no longer holds.
    func emitGone(_ keys: [UInt32], at path: ObjectPath) {
        let sources = keys.reduce(into: ModemLocationSources()) { $0.insert(ModemLocationSources(rawValue: $1)) }
        guard !sources.isEmpty else { return }
        emit(.locationGone(sources, modem: path.rawValue))
    }

    func propertiesChanged(_ message: Message) {
        guard let owner, message.sender == owner, let path = message.path, var modem = modems[path] else { return }
        let arguments = message.arguments()
        guard arguments.count == 3, let interface = arguments[0].string,
            let changed = arguments[1].stringKeyedEntries
        else { return badValue("PropertiesChanged on \(path) with (\(message.signature))") }
        switch interface {
        case Self.modemInterface:
            let before = modem
            apply(modemProperties: changed, to: &modem, at: path)
            modems[path] = modem
            if modem.state != before.state {
                logger.info("modems: \(path) is \(modem.stateName)")
                modems[path]?.location?.forgetFailures()
                setUp(path)
            }
            if modem.accessTechnologies != before.accessTechnologies,
                case .string(let cell)? = modem.location?.lastValues[ModemLocationSources.threeGPPCell.rawValue]
            {
                emit(.location(.servingCell(cell, modem.accessTechnologies, modem: path.rawValue)))
            }
        case Self.locationInterface:
            guard var location = modem.location else { return }
            let before = location.lastValues
            let changedKeys = apply(locationProperties: changed, to: &location, at: path)
            modem.location = location
            modems[path] = modem
            passOn(
                location.lastValues, from: path, changed: changedKeys.filter { before[$0] != location.lastValues[$0] })
            emitGone(before.keys.filter { location.lastValues[$0] == nil }, at: path)
            setUp(path)
        default:
            return
        }
        announceAvailability()
    }
}
