import Testing
import WhereaboutsCore

/// `bytes` as text.
private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

@Suite("Ichnaea request bodies")
struct IchnaeaQueryTests {
    @Test func aWiFiQuerySendsOnlyAddressesAndSignalsAndNoFallbacks() throws {
        let usable = [
            WiFiFixtures.accessPoint(0xaabbcc, -48, frequency: 5180, age: .milliseconds(1500)),
            WiFiFixtures.accessPoint(2, -71, frequency: 2412),
        ]
        let body = IchnaeaQuery.wifi(usable)
        #expect(
            text(body)
                == #"{"considerIp":false,"fallbacks":{"ipf":false,"lacf":false},"wifiAccessPoints":["#
                + #"{"macAddress":"00:1a:2b:aa:bb:cc","signalStrength":-48},"#
                + #"{"macAddress":"00:1a:2b:00:00:02","signalStrength":-71}]}"#)
        let parsed = try JSONValue.parse(body)
        for accessPoint in try #require(parsed["wifiAccessPoints"]?.arrayValue) {
            #expect(accessPoint.objectValue?.keys.sorted() == ["macAddress", "signalStrength"])
        }
        #expect(!text(body).contains("net"))
    }

    @Test func aCellQuerySendsEachCellsFiveIdentifiersAndAllowsOnlyTheAreaFallback() throws {
        let lte = try ServingCell(modemManagerLocation: "310,410,0,8A1B2C3,5A1F", accessTechnologies: .lte)
        let nr = try ServingCell(modemManagerLocation: "262,01,0,1A2B3C4D5,1F0A3C", accessTechnologies: .nr)
        let body = IchnaeaQuery.geolocate(accessPoints: [], cells: [lte, nr, lte])
        #expect(
            text(body)
                == #"{"cellTowers":["#
                + #"{"cellId":144814787,"locationAreaCode":23071,"mobileCountryCode":310,"mobileNetworkCode":410,"#
                + #""radioType":"lte"},"#
                + #"{"cellId":7024657621,"locationAreaCode":2034236,"mobileCountryCode":262,"mobileNetworkCode":1,"#
                + #""radioType":"nr"}],"#
                + #""considerIp":false,"fallbacks":{"ipf":false,"lacf":true}}"#)
    }

    @Test func cellsAndAccessPointsGoInOneQuery() throws {
        let gsm = try ServingCell(modemManagerLocation: "262,01,1A2B,3C4D,0", accessTechnologies: .edge)
        let usable = [WiFiFixtures.accessPoint(0xaabbcc, -48, frequency: 5180), WiFiFixtures.accessPoint(2, -71)]
        #expect(
            text(IchnaeaQuery.geolocate(accessPoints: usable, cells: [gsm]))
                == #"{"cellTowers":["#
                + #"{"cellId":15437,"locationAreaCode":6699,"mobileCountryCode":262,"mobileNetworkCode":1,"#
                + #""radioType":"gsm"}],"#
                + #""considerIp":false,"fallbacks":{"ipf":false,"lacf":true},"wifiAccessPoints":["#
                + #"{"macAddress":"00:1a:2b:aa:bb:cc","signalStrength":-48},"#
                + #"{"macAddress":"00:1a:2b:00:00:02","signalStrength":-71}]}"#)
        // One access point cannot place the client, so it is not told to the server.
        #expect(
            IchnaeaQuery.geolocate(accessPoints: [usable[0]], cells: [gsm])
                == IchnaeaQuery.geolocate(accessPoints: [], cells: [gsm]))
        #expect(!text(IchnaeaQuery.geolocate(accessPoints: [usable[0]], cells: [gsm])).contains("wifiAccessPoints"))
    }

    @Test func withoutCellsTheQueryIsTheWiFiQuery() {
        let usable = [
            WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(2, -60), WiFiFixtures.accessPoint(3, -70),
        ]
        for count in 0...usable.count {
            let some = Array(usable.prefix(count))
            #expect(IchnaeaQuery.geolocate(accessPoints: some, cells: []) == IchnaeaQuery.wifi(some), "\(count)")
        }
    }

    @Test func anIPQueryIsAnEmptyObject() {
        #expect(text(IchnaeaQuery.ip()) == "{}")
    }

    @Test func aSubmissionCarriesWhatBeaconDBNeeds() throws {
        let item = SubmissionItem(
            timestamp: WallTime(microseconds: 1_700_000_000_123_456), latitude: 48.137154, longitude: 11.576124,
            accuracy: 4.5, altitude: 519.25, speed: 1.5, heading: 270,
            accessPoints: [
                WiFiFixtures.accessPoint(
                    1, -48, ssid: Array("Café \"Ø\"".utf8), frequency: 5180, age: .milliseconds(1500)),
                WiFiFixtures.accessPoint(2, -71),
                WiFiFixtures.accessPoint(3, -80, ssid: [0xff, 0xfe], frequency: 2412),
            ])
        let body = text(IchnaeaQuery.submission(items: [item]))
        #expect(
            body
                == #"{"items":[{"position":{"accuracy":4.5,"altitude":519.25,"heading":270,"latitude":48.137154,"#
                + #""longitude":11.576124,"source":"gps","speed":1.5},"timestamp":1700000000123,"wifiAccessPoints":["#
                + #"{"age":1500,"frequency":5180,"macAddress":"00:1a:2b:00:00:01","signalStrength":-48,"ssid":"Café \"Ø\""},"#
                + #"{"macAddress":"00:1a:2b:00:00:02","signalStrength":-71,"ssid":"net2"}]}]}"#)
    }

    @Test func aSubmissionLeavesOutWhatIsUnknownAndItemsThatCannotCount() throws {
        let sparse = SubmissionItem(
            timestamp: WiFiFixtures.wall(), latitude: -33.5, longitude: 151, accuracy: 20, altitude: .nan,
            speed: .infinity, heading: nil,
            accessPoints: [
                WiFiFixtures.accessPoint(1, -50, age: .milliseconds(-2500)),
                WiFiFixtures.accessPoint(2, -60, frequency: 0),
            ])
        let lonely = SubmissionItem(
            timestamp: WiFiFixtures.wall(), latitude: 1, longitude: 2, accuracy: 3,
            accessPoints: [WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(2, -60, ssid: [0xc0, 0x80])])
        let parsed = try JSONValue.parse(IchnaeaQuery.submission(items: [sparse, lonely]))
        let items = try #require(parsed["items"]?.arrayValue)
        #expect(items.count == 1)
        #expect(items[0]["position"]?.objectValue?.keys.sorted() == ["accuracy", "latitude", "longitude", "source"])
        #expect(items[0]["timestamp"] == 1_700_000_000_000)
        let accessPoints = try #require(items[0]["wifiAccessPoints"]?.arrayValue)
        #expect(accessPoints[0]["age"] == -2500)
        #expect(accessPoints[1]["frequency"] == nil)
        #expect(text(IchnaeaQuery.submission(items: [lonely])) == #"{"items":[]}"#)
        #expect(text(IchnaeaQuery.submission(items: [])) == #"{"items":[]}"#)
    }

    @Test func submittableAccessPointsHaveUTF8Names() {
        let item = SubmissionItem(
            timestamp: WiFiFixtures.wall(), latitude: 0, longitude: 0, accuracy: 1,
            accessPoints: [
                WiFiFixtures.accessPoint(1, -50, ssid: Array("ok".utf8)),
                WiFiFixtures.accessPoint(2, -50, ssid: [0xed, 0xa0, 0x80]),
                WiFiFixtures.accessPoint(3, -50, ssid: Array("日本".utf8)),
            ])
        #expect(item.submittableAccessPoints.map(\.bssid) == [WiFiFixtures.bssid(1), WiFiFixtures.bssid(3)])
    }
}
