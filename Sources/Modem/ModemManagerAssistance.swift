import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// Assisting a modem's receiver before `Setup` turns it on: the SUPL server, then the predicted orbits.
extension ModemManagerClient {
    /// `MM_MODEM_LOCATION_ASSISTANCE_DATA_TYPE_XTRA`: the modem takes Qualcomm's predicted-orbit files.
    static let xtraAssistance: UInt32 = 1 << 0

    /// The longest a `SetSuplServer` or `InjectAssistanceData` is waited for, so that the receiver waits at most
    /// this twice and the download's ``PredictedOrbitSource/downloadTimeout`` to start.
    static let preparationCallTimeout = Duration.seconds(10)

    /// Sets the SUPL server and injects the predicted orbits on the modem at `path`, then sets it up; `Setup`
    /// waits meanwhile. Whatever fails is logged and the receiver starts without it. The orbits are asked for only
    /// while a client still needs the receiver and ModemManager has not refused this service the modem.
    func prepareReceiver(_ path: ObjectPath) {
        guard let owner, let assistance, let location = modems[path]?.location else { return }
        preparations += 1
        let preparation = preparations
        modems[path]?.location?.preparing = preparation
        let generation = self.generation
        BusActor.task { [weak self] in
            guard let self else { return }
            var refused = location.refused
            if let server = assistance.suplServer, !location.suplServerSet,
                !location.capabilities.isDisjoint(with: .agps)
            {
                let error = await self.call("SetSuplServer", [.string(server)], at: path, of: owner)
                guard self.isCurrent(preparation, at: path, generation: generation) else { return }
                self.modems[path]?.location?.suplServerSet = true
                if let error {
                    refused = refused || error.name == Self.unauthorised
                    self.logger.warning("modems: \(path) does not take the SUPL server \(server): \(error)")
                } else {
                    self.logger.info("modems: \(path): SUPL server \(server)")
                }
            }
            if location.supportedAssistanceData & Self.xtraAssistance != 0, self.needed.contains(.gpsNMEA), !refused,
                let file = await assistance.predictedOrbits(modemServers: location.assistanceDataServers),
                self.isCurrent(preparation, at: path, generation: generation),
                self.modems[path]?.location?.injectedOrbitsDownloadTime != file.downloaded
            {
                let bytes = DBusValue.array(element: "y", file.data.map { .byte($0) })
                let error = await self.call("InjectAssistanceData", [bytes], at: path, of: owner)
                guard self.isCurrent(preparation, at: path, generation: generation) else { return }
                self.modems[path]?.location?.injectedOrbitsDownloadTime = file.downloaded
                self.modems[path]?.location?.tookOrbits = error == nil
                if let error {
                    self.logger.warning(
                        "modems: \(path) refuses the predicted orbits from \(loggableURL(file.source)): \(error); "
                            + "its receiver starts unassisted")
                } else {
                    self.logger.info("modems: \(path): predicted orbits injected (\(file.data.count) bytes)")
                }
            }
            guard self.isCurrent(preparation, at: path, generation: generation) else { return }
            self.modems[path]?.location?.preparing = nil
            // A client that left meanwhile leaves the receiver to be prepared again when one needs it.
            self.modems[path]?.location?.receiverPrepared = self.needed.contains(.gpsNMEA)
            self.setUp(path)
        }
    }

    /// Whether the preparation numbered `preparation` is still the one of the modem at `path`, on the same
    /// ModemManager: not when the modem or its Location interface went (and perhaps came back) meanwhile.
    private func isCurrent(_ preparation: Int, at path: ObjectPath, generation: Int) -> Bool {
        generation == self.generation && modems[path]?.location?.preparing == preparation
    }

    /// Calls `member` of the `Modem.Location` interface of the modem at `path` on ModemManager (`owner`); returns
    /// its error, nil when it succeeded.
    private func call(_ member: String, _ arguments: [DBusValue], at path: ObjectPath, of owner: String) async
        -> DBusError?
    {
        do throws(DBusError) {
            _ = try await connection.call(
                destination: owner, path: path, interface: Self.locationInterface, member: member,
                arguments: arguments, timeout: Self.preparationCallTimeout)
            return nil
        } catch {
            return error
        }
    }
}
