import Loop
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// A ``ModemLocationService`` driven by the test: what it offers, what it was asked for, and the events it sends.
@BusActor
final class FakeModems: ModemLocationService {
    var reasons: [ModemLocationSources: String] = [:]
    private(set) var needs: [ModemLocationConsumer: ModemLocationSources] = [:]
    private(set) var refreshRates: [UInt32] = []
    private var observers: [@BusActor (ModemLocationEvent) -> Void] = []

    func unavailability(of source: ModemLocationSources) -> String? { reasons[source] }
    func observe(_ observer: @escaping @BusActor (ModemLocationEvent) -> Void) { observers.append(observer) }
    func setNeeded(_ sources: ModemLocationSources, by consumer: ModemLocationConsumer) { needs[consumer] = sources }
    func setGPSRefreshRate(_ seconds: UInt32) { refreshRates.append(seconds) }
    var modemSummaries: [String: String] { ["Modem/0": "registered; sources gps-nmea"] }

    /// Sends `event` to every observer.
    func send(_ event: ModemLocationEvent) { for observer in observers { observer(event) } }
}

@Suite("Modem GNSS provider")
@BusActor
struct ModemGNSSProviderTests {
    static let gga = "$GNGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*59"
    static let rmc = "$GNRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*74"

    func make() -> (FakeModems, ModemGNSSProvider, FixLog, LogLines) {
        let modems = FakeModems()
        let logs = LogLines()
        let provider = ModemGNSSProvider(modems: modems, clock: ManualClock(), logger: logs)
        let fixes = FixLog()
        provider.onFix = { fixes.fixes.append($0) }
        return (modems, provider, fixes, logs)
    }

    @Test func theReceiverIsNeededOnlyWhileStarted() {
        let (modems, provider, _, _) = make()
        #expect(modems.needs[.gnss] == nil)
        provider.start()
        #expect(modems.needs[.gnss] == .gpsNMEA)
        provider.stop()
        #expect(modems.needs[.gnss] == [])
        #expect(provider.kind == .modemGNSS && provider.minimumClientLevel == .exact)
    }

    @Test func anEpochOfAnyTalkerIsOneFixAndARepeatIsNotReadAgain() {
        let (modems, provider, fixes, _) = make()
        let text = Self.gga + "\r\n" + Self.rmc
        modems.send(.location(.nmea(text, modem: "/m/0")))
        #expect(fixes.fixes.isEmpty, "read while stopped")
        provider.start()
        modems.send(.location(.nmea(text, modem: "/m/0")))
        modems.send(.location(.nmea(text, modem: "/m/0")))
        #expect(fixes.fixes.count == 1)
        guard let fix = fixes.fixes.first else {
            Issue.record("no fix")
            return
        }
        #expect(abs(fix.latitude - 48.1173) < 1e-6 && abs(fix.longitude - 11.516_666_7) < 1e-6)
        #expect(abs((fix.speed ?? 0) - 22.4 * 1852 / 3600) < 1e-9 && fix.course == 84.4)
        #expect(fix.provider == .modemGNSS && fix.description == "Modem GNSS")
    }

    @Test func badSentencesAreCountedLoggedOnceAndIgnored() {
        let (modems, provider, fixes, logs) = make()
        provider.start()
        modems.send(.location(.nmea("$GPGGA,garbage*00\r\nnot nmea at all", modem: "/m/0")))
        modems.send(.location(.nmea("$GPGGA,more,garbage*00", modem: "/m/0")))
        #expect(fixes.fixes.isEmpty)
        #expect(provider.details["rejected-sentences"] == .count(3))
        #expect(logs.lines.filter { $0.contains("bad sentence") }.count == 1)
        modems.send(.location(.nmea(Self.gga + "\r\n" + Self.rmc, modem: "/m/0")))
        #expect(fixes.fixes.count == 1)
    }

    @Test func availabilityFollowsTheModemsWithTheirReason() {
        let (modems, provider, _, _) = make()
        var changes = 0
        provider.onAvailabilityChanged = { changes += 1 }
        #expect(provider.availableLevel == .exact)
        modems.reasons[.gpsNMEA] = "modem-disabled"
        modems.send(.availabilityChanged)
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "modem-disabled")
        modems.send(.availabilityChanged)
        #expect(changes == 1)
        modems.reasons[.gpsNMEA] = nil
        modems.send(.availabilityChanged)
        #expect(provider.availableLevel == .exact && changes == 2)
    }
}
