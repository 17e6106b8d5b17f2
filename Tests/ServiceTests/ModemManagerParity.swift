import DBus
import Loop
import TestBasics
import TestSupport
import Testing

/// What ModemManager 1.20 was seen to do that a client can tell, checked alike on the real ModemManager
/// (`RealModemManagerTests`) and on the stand-in (`ModemManagerStandInTests`), so that where the stand-in strays from
/// it a test fails.
enum ModemManagerParity {
    /// Checks the `gps-nmea` entry of `Location` as ModemManager writes it: the latest sentence of each type, a
    /// sequence such as GSV kept whole, each sentence with its CR LF and one more CR LF between two types
    /// (`$GPGSV,3,1…\r\n$GPGSV,3,2…\r\n$GPGSV,3,3…\r\n\r\n$GNRMC…\r\n\r\n$GNGGA…\r\n`), holding `sentences`,
    /// in whatever order (ModemManager's is its hash table's, not the receiver's).
    static func checkNMEAValue(_ value: String, holds sentences: Set<String>) {
        guard value.hasSuffix("\r\n") else {
            Issue.record("no CR LF at the end: \(value.debugDescription)")
            return
        }
        // "\r\n" is one Character: drop the two scalars.
        let body = String(String.UnicodeScalarView(value.unicodeScalars.dropLast(2)))
        let types = body.components(separatedBy: "\r\n\r\n").map { $0.components(separatedBy: "\r\n") }
        #expect(Set(types.joined()) == sentences, "\(value.debugDescription)")
        #expect(types.joined().count == sentences.count, "\(value.debugDescription)")
        for type in types {
            let kinds = Set(type.map { $0.prefix { $0 != "," } })
            #expect(kinds.count == 1, "one type per part: \(type)")
        }
    }

    /// The `PropertiesChanged` signals among `signals` from the object at `modem`, in order: each one's interface
    /// and the names of the properties it changed.
    static func propertyChanges(_ signals: [Message], modem: String) -> [(interface: String, properties: [String])] {
        signals.filter { $0.path?.description == modem && $0.member == "PropertiesChanged" }.map { message in
            let arguments = message.arguments()
            let changed = arguments.dropFirst().first?.stringKeyedEntries ?? [:]
            return (arguments.first?.string ?? "", changed.keys.sorted())
        }
    }

    /// Checks the modem's `PropertiesChanged` from a registration lost and found again (``propertyChanges(_:modem:)``):
    /// on losing, `State` first, then `Location` without the cell; on finding, the network's `AccessTechnologies`
    /// and `Location` with the new cell before `State` says registered. A client that waited for the registered
    /// state before reading the cell would miss it on the real ModemManager.
    static func checkRegistrationSignals(_ changes: [(interface: String, properties: [String])]) {
        let states = changes.indices.filter { changes[$0].properties.contains("State") }
        let described = changes.map { "\($0.interface.split(separator: ".").last ?? ""): \($0.properties)" }
        guard states.count == 2 else {
            Issue.record("expected two State changes, searching and registered: \(described)")
            return
        }
        let locations = changes.indices.filter {
            changes[$0].interface.hasSuffix(".Location") && changes[$0].properties.contains("Location")
        }
        let technologies = changes.indices.filter { changes[$0].properties.contains("AccessTechnologies") }
        #expect(locations.filter { $0 > states[0] && $0 < states[1] }.count == 2, "\(described)")
        #expect(locations.allSatisfy { $0 > states[0] && $0 < states[1] }, "\(described)")
        #expect(technologies.contains { $0 > states[0] && $0 < states[1] }, "\(described)")
    }
}

/// The stand-in's half of the parity (the real ModemManager's is in `RealModemManagerTests`).
@Suite("ModemManager stand-in: what ModemManager 1.20 was seen to do")
@BusActor
struct ModemManagerStandInParityTests {
    typealias Environment = ModemManagerStandInTests.Environment
    nonisolated static let gga = ModemManagerStandInTests.gga
    nonisolated static let rmc = ModemManagerStandInTests.rmc
    /// A GSA and a sequence of three GSV.
    nonisolated static let sky = [
        "$GPGSA,A,3,02,05,12,15,24,29,,,,,,,1.8,0.9,1.5*3B",
        "$GPGSV,3,1,06,02,62,048,44,05,41,117,40*74", "$GPGSV,3,2,06,12,33,205,38,15,18,301,31*7C",
        "$GPGSV,3,3,06,24,55,260,42,29,12,084,27*7A",
    ]

    @Test func theLocationValueAndTheRegistrationSignalsAreWhatModemManagerGives() async throws {
        let environment = try await onOwnThread { try Environment() }
        let mm = environment.modemManager
        let (modem, value) = try await onOwnThread {
            let modem = try mm.addModem(
                capabilities: [.threeGPPCell, .gpsNMEA], state: .registered, accessTechnologies: .lte)
            try mm.setServingCell(modem, operatorCode: "26201", lac: 0, tac: 0x3C4D, cellID: 0x1A2_B3C4)
            #expect(try environment.location(modem, "Setup", ["ub", "5", "true"]).status == 0)
            #expect(try environment.location(modem, "SetGpsRefreshRate", ["u", "0"]).status == 0)
            try mm.pushNMEA(modem, [Self.gga, Self.rmc] + Self.sky)
            let words = try environment.locationProperty(modem, "Location")
            guard let index = words.firstIndex(of: "4") else { throw TestEnvironmentError("no sentences: \(words)") }
            #expect(try environment.location(modem, "Setup", ["ub", "1", "true"]).status == 0)
            return (modem, words[index + 2])
        }
        ModemManagerParity.checkNMEAValue(value, holds: Set([Self.gga, Self.rmc] + Self.sky))

        let recorder = try await GeoClueTestClient(bus: environment.bus)
        defer { recorder.close() }
        try await onOwnThread {
            try mm.setState(modem, .searching)
            try mm.setState(modem, .registered)
        }
        try await recorder.waitFor("the modem registered again") {
            ModemManagerParity.propertyChanges(recorder.signals, modem: modem).filter {
                $0.properties.contains("State")
            }.count == 2
        }
        ModemManagerParity.checkRegistrationSignals(ModemManagerParity.propertyChanges(recorder.signals, modem: modem))
    }
}
