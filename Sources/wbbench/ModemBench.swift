import DBus
import Foundation
import Glibc
import Loop
import TestSupport

/// `wbbench --modem`: the modem path. The ModemManager stand-in on a private bus with one registered modem, the
/// real whereaboutsd with `[modem-gps]` on, and an exact client that sees both the stand-in's `PropertiesChanged`
/// for `Location` (the moment ModemManager publishes the sentences) and the daemon's `LocationUpdated`, on one
/// connection and one clock: the time between them is the daemon's share, the bus's two hops included.
enum ModemBench {
    @concurrent static func rig() async throws -> (PrivateBus, ModemManagerMock, DaemonHarness, String) {
        let bus = try PrivateBus(extraPolicy: ModemManagerMock.busPolicy)
        let modemManager = try ModemManagerMock(bus: bus)
        let modem = try modemManager.addModem(capabilities: [.gpsNMEA], state: .registered)
        let harness = try DaemonHarness(config: "[modem-gps]\nenable=true\n", bus: bus)
        try harness.startDaemon()
        return (bus, modemManager, harness, modem)
    }

    /// One epoch's GGA, GSA and RMC at `time` without their line ends, moving a little each time.
    static func sentences(_ index: Int, at time: Double) -> [String] {
        NMEAEpoch(time: time, latitude: 48.1 + Double(index % 1000) * 0.00001, longitude: 11.5).sentences.map {
            $0.trimmingCharacters(in: .newlines)
        }
    }

    @concurrent static func push(_ modemManager: ModemManagerMock, _ modem: String, _ index: Int) async throws {
        try modemManager.pushNMEA(modem, sentences(index, at: NMEA.wallNow()))
    }

    @BusActor
    static func run(_ options: Options) async throws {
        let (bus, modemManager, harness, modem) = try await rig()
        defer {
            harness.stop()
            modemManager.stop()
        }
        let (app, path, arrivals) = try await exactClient(harness)
        defer { app.close() }
        var published: [Int64] = []
        _ = try await app.connection.subscribe(
            SignalMatch(
                sender: ModemManagerMock.busName, path: ObjectPath(modem), interface: "org.freedesktop.DBus.Properties",
                member: "PropertiesChanged")
        ) { message in
            let changed = message.arguments().dropFirst().first?.stringKeyedEntries ?? [:]
            if message.arguments().first?.string == ModemManagerMock.locationInterface, changed["Location"] != nil {
                published.append(monotonicNanoseconds())
            }
        }
        _ = try await app.call(path, GeoClueTestClient.clientInterface, "Start")
        print("wbbench --modem: whereaboutsd \(try ProjectPaths.product("whereaboutsd").path), bus \(bus.address)")
        // The stand-in publishes the NMEA once Setup has enabled it; the first epochs only warm up.
        let skip = 5
        var index = 0
        while arrivals.times.count < skip + options.reports, index < (skip + options.reports) * 4 {
            try await push(modemManager, modem, index)
            index += 1
            await pause(options.interval)
        }
        await pause(500)
        var latencies: [Double] = []
        var unmatched = 0
        let times = arrivals.times
        for (offset, start) in published.enumerated().dropFirst(skip) {
            let end = offset + 1 < published.count ? published[offset + 1] : Int64.max
            guard let arrival = times.first(where: { $0 >= start && $0 < end }) else {
                unmatched += 1
                continue
            }
            latencies.append(ms(arrival - start))
        }
        print(
            "\nModem NMEA → LocationUpdated, \(latencies.count) epochs, one every \(options.interval) ms "
                + "(the stand-in's PropertiesChanged for Location → the daemon's LocationUpdated, at one client)")
        print("   \(summary(latencies))")
        if unmatched > 0 { print("   \(unmatched) published epochs without a LocationUpdated") }
    }
}
