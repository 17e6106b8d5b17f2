import Loop

/// GeoClue 2.6 with only its modem GPS source on, on a private bus of its own with the ModemManager stand-in
/// holding one registered modem with a GPS, and a GeoClue agent registered (GeoClue answers `GetClient` only once
/// one is): what the modem benchmark measures GeoClue with, and what the test that GeoClue reads the stand-in uses.
/// The bus, the stand-in and GeoClue stop when the rig goes (their own `deinit`), or at ``stop()``.
@BusActor
public final class GeoClueModemRig {
    public let bus: PrivateBus
    public let modemManager: ModemManagerMock
    /// The modem's object path.
    public let modem: String
    public let geoClue: GeoClueHarness
    private let agent: GeoClueTestAgent

    /// The rig with `app` allowed by GeoClue's configuration, GeoClue started and the agent registered.
    public init(app: String) async throws {
        bus = try PrivateBus(extraPolicy: ModemManagerMock.busPolicy)
        modemManager = try ModemManagerMock(bus: bus)
        modem = try modemManager.addModem(capabilities: [.gpsNMEA], state: .registered)
        geoClue = try GeoClueHarness(
            config: GeoClueHarness.configuration(apps: [app: true], source: .modemGPS), bus: bus)
        try geoClue.start()
        agent = try await GeoClueTestAgent.registered(on: bus, as: GeoClueHarness.agentId)
    }

    /// Closes the agent and stops GeoClue, the stand-in and the bus.
    public func stop() {
        agent.close()
        geoClue.stop()
        modemManager.stop()
        bus.stop()
    }
}
