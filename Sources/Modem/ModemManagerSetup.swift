import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// Setting up on the modems the location sources the consumers need, and the GNSS refresh rate.
extension ModemManagerClient {
    /// Sets up on the modem at `path` what the consumers need of what it offers, if that is not what it has.
    func setUp(_ path: ObjectPath) {
        guard let owner, let modem = modems[path], modem.isEnabled, let location = modem.location,
            !location.setupInFlight
        else { return }
        let wanted = needed.intersection(location.capabilities)
        let others = location.enabled.subtracting(location.ours)
        let target = others.union(wanted)
        let signals = wanted.isEmpty ? location.signals && !location.turnedSignalsOn : true
        let turnsSignalsOn = signals && (location.turnedSignalsOn || !location.signals)
        guard target != location.enabled || signals != location.signals else {
            pace(path)
            return
        }
        if let failed = location.failedSetup, failed.sources == target, failed.signals == signals { return }
        if location.preparing != nil { return }
        if assistance != nil, target.contains(.gpsNMEA), !location.enabled.contains(.gpsNMEA),
            !location.receiverPrepared
        {
            prepareReceiver(path)
            return
        }
        modems[path]?.location?.setupInFlight = true
        // Each time the receiver is turned on it is prepared anew (a kept file may have expired since).
        if target.contains(.gpsNMEA), !location.enabled.contains(.gpsNMEA) {
            modems[path]?.location?.receiverPrepared = false
        }
        callLocation("Setup", [.uint32(target.rawValue), .boolean(signals)], at: path, of: owner) { client, error in
            client.setUpEnded(
                path, target: target, others: others, signals: signals, turnsSignalsOn: turnsSignalsOn, error: error)
        }
    }

    /// Calls `member` of the `Modem.Location` interface of the modem at `path` on ModemManager (`owner`), then
    /// hands its error (nil: it succeeded) to `ended`, unless ModemManager left or came back meanwhile.
    private func callLocation(
        _ member: String, _ arguments: [DBusValue], at path: ObjectPath, of owner: String,
        then ended: @escaping @BusActor (ModemManagerClient, DBusError?) -> Void
    ) {
        let generation = self.generation
        BusActor.task { [weak self] in
            guard let self else { return }
            let result: DBusError?
            do throws(DBusError) {
                _ = try await self.connection.call(
                    destination: owner, path: path, interface: Self.locationInterface, member: member,
                    arguments: arguments, timeout: Self.callTimeout)
                result = nil
            } catch {
                result = error
            }
            guard generation == self.generation else { return }
            ended(self, result)
        }
    }

    private func setUpEnded(
        _ path: ObjectPath, target: ModemLocationSources, others: ModemLocationSources, signals: Bool,
        turnsSignalsOn: Bool, error: DBusError?
    ) {
        guard var location = modems[path]?.location else { return }
        location.setupInFlight = false
        if let error {
            location.failedSetup = (target, signals)
            if error.name == Self.unauthorised {
                if !location.refused {
                    logger.error(
                        "modems: ModemManager refuses to set up location sources \(target) on \(path): polkit does not "
                            + "grant this service's user org.freedesktop.ModemManager1.Device.Control (\(error)); the "
                            + "rule \(Self.polkitRule), which the package installs, grants it to the user whereabouts")
                }
                location.refused = true
            } else {
                logger.warning("modems: cannot set up location sources \(target) on \(path): \(error)")
            }
        } else {
            logger.info("modems: \(path): location sources \(target)\(signals ? ", signalled" : "")")
            location.failedSetup = nil
            location.refused = false
            location.ours = target.subtracting(others)
            location.enabled = target
            location.signals = signals
            location.turnedSignalsOn = turnsSignalsOn
            if !target.contains(.gpsNMEA) { location.receiverPrepared = false }
        }
        modems[path]?.location = location
        announceAvailability()
        setUp(path)
    }

    /// Sets the GNSS refresh rate on the modem at `path` if its receiver is needed and the rate is not set yet, nor
    /// being set, nor failed to be set.
    func pace(_ path: ObjectPath) {
        guard let owner, let location = modems[path]?.location, !location.refused, !location.pacingInFlight,
            !location.enabled.intersection(needed).isDisjoint(with: .gps), location.refreshRate != refreshRate,
            location.failedRefreshRate != refreshRate
        else { return }
        let rate = refreshRate
        modems[path]?.location?.pacingInFlight = true
        callLocation("SetGpsRefreshRate", [.uint32(rate)], at: path, of: owner) { client, error in
            client.paceEnded(path, rate: rate, error: error)
        }
    }

    /// Takes the answer to `SetGpsRefreshRate(rate)`, then paces again in case the rate wanted changed meanwhile.
    private func paceEnded(_ path: ObjectPath, rate: UInt32, error: DBusError?) {
        guard var location = modems[path]?.location, location.pacingInFlight else { return }
        location.pacingInFlight = false
        if let error {
            location.failedRefreshRate = rate
            logger.warning("modems: cannot set the GNSS refresh rate of \(path) to \(rate) s: \(error)")
        } else {
            location.refreshRate = rate
            location.failedRefreshRate = nil
            logger.info("modems: \(path): GNSS refresh rate \(rate) s")
        }
        modems[path]?.location = location
        pace(path)
    }
}
