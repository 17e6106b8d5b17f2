import Testing
import WhereaboutsCore

/// An access point with the address written out.
private func station(_ address: String, _ signal: Int = -60, ssid: String = "cafe") -> AccessPoint {
    AccessPoint(bssid: BSSID(text: address)!, ssid: Array(ssid.utf8), signal: signal)
}

@Suite("Access point selection")
struct AccessPointSelectionTests {
    let selection = AccessPointSelection()

    @Test func defaults() {
        #expect(selection.movingNetworks == MovingNetworks())
        #expect(selection.maximumSent == 16)
        #expect(AccessPointSelection.minimumForQuery == 2)
    }

    @Test func dropsHiddenNetworks() {
        #expect(selection.exclusion(of: station("00:1a:2b:00:00:01", ssid: "")) == .hiddenNetwork)
        var nul = station("00:1a:2b:00:00:01")
        nul.ssid = [0, 0, 0, 0]
        #expect(selection.exclusion(of: nul) == .hiddenNetwork)
        nul.ssid = [0, 0x41, 0]
        #expect(selection.exclusion(of: nul) == nil)
    }

    @Test func dropsNetworksThatOptOutAnywhereInTheName() {
        for name in ["home_nomap", "_nomap", "_nomap_home", "x_nomapy", "cafe_optout", "_optout!", "a_optout_nomap"] {
            #expect(selection.exclusion(of: station("00:1a:2b:00:00:01", ssid: name)) == .optedOut, "\(name)")
        }
        // Bytes, case-sensitive, as beaconDB compares: these are not the markers.
        for name in ["home_NOMAP", "home_Nomap", "homenomap", "_no_map", "optout", "_opt out", "_nomа p"] {
            #expect(selection.exclusion(of: station("00:1a:2b:00:00:01", ssid: name)) == nil, "\(name)")
        }
        // A marker inside a name that is not UTF-8 still counts.
        var raw = station("00:1a:2b:00:00:01")
        raw.ssid = [0xff, 0xfe] + Array("_nomap".utf8) + [0x80]
        #expect(selection.exclusion(of: raw) == .optedOut)
    }

    @Test func dropsAddressesThatNameNoAccessPoint() {
        #expect(selection.exclusion(of: station("00:00:00:00:00:00")) == .nullAddress)
        #expect(selection.exclusion(of: station("ff:ff:ff:ff:ff:ff")) == .groupAddress)
        #expect(selection.exclusion(of: station("01:00:5e:90:10:00")) == .groupAddress)  // Ichnaea's test address
        #expect(selection.exclusion(of: station("33:33:00:00:00:01")) == .groupAddress)
        #expect(selection.exclusion(of: station("00:00:00:00:00:01")) == nil)
        #expect(selection.exclusion(of: station("fc:ec:da:12:34:56")) == nil)  // 0xfc: both low bits clear
    }

    @Test func dropsVehiclesNetworksAndPhonesHotspotsUnlessAllowed() {
        let moving = [
            station("00:1a:2b:00:00:01", ssid: "WIFIonICE"), station("00:1a:2b:00:00:02", ssid: "FlixBus Wi-Fi"),
            station("00:1a:2b:00:00:03", ssid: "Anna's iPhone"), station("00:1a:2b:00:00:04", ssid: "ANDROIDAP_1f2e"),
            station("06:1a:2b:3c:4d:5e", ssid: "Galaxy A52 7f3c"), station("da:a1:19:00:00:01", ssid: "Pixel_4821"),
            station("fe:ff:ff:ff:ff:ff", ssid: "My Phone"),
        ]
        let allowing = AccessPointSelection(movingNetworks: nil)
        for accessPoint in moving {
            #expect(selection.exclusion(of: accessPoint) == .movingNetwork, "\(accessPoint)")
            #expect(allowing.exclusion(of: accessPoint) == nil, "\(accessPoint)")
        }
        #expect(selection.movingCount(moving + moving) == moving.count)
        // A fixed network named like a phone keeps its maker's address; a router's second network has a locally
        // administered one; neither moves. Nor does a name that only begins like a vehicle's.
        for fixed in [
            station("00:1a:2b:00:00:05", ssid: "Galaxy Cafe"), station("02:00:00:00:00:01", ssid: "home-guest"),
            station("00:1a:2b:00:00:06", ssid: "WIFIonICE-lounge"), station("00:1a:2b:00:00:07", ssid: "sj"),
        ] {
            #expect(selection.exclusion(of: fixed) == nil, "\(fixed)")
        }
        // Allowing them does not let group addresses through.
        #expect(allowing.exclusion(of: station("03:00:00:00:00:01", ssid: "iPhone")) == .groupAddress)
    }

    @Test func theConfigurationAddsVehicleNetworksByExactName() {
        let selection = AccessPointSelection(movingNetworks: MovingNetworks(configured: ["Ferry Wi-Fi", "Tram 5"]))
        #expect(selection.exclusion(of: station("00:1a:2b:00:00:01", ssid: "Ferry Wi-Fi")) == .movingNetwork)
        #expect(selection.exclusion(of: station("00:1a:2b:00:00:02", ssid: "Tram 5")) == .movingNetwork)
        #expect(selection.exclusion(of: station("00:1a:2b:00:00:03", ssid: "tram 5")) == nil)
        #expect(selection.exclusion(of: station("00:1a:2b:00:00:04", ssid: "WIFIonICE")) == .movingNetwork)
    }

    @Test func dropsSignalsOutsideIchnaeasRange() {
        for signal in [-100, -99, -60, -11, -10] {
            #expect(selection.exclusion(of: station("00:1a:2b:00:00:01", signal)) == nil, "\(signal)")
        }
        for signal in [-101, -120, -9, -5, 0, 1, 60, Int.min, Int.max] {
            #expect(
                selection.exclusion(of: station("00:1a:2b:00:00:01", signal)) == .signalOutOfRange, "\(signal)")
        }
    }

    @Test func keepsTheStrongestSightingOfEachAddress() {
        let scan = [
            WiFiFixtures.accessPoint(1, -70, ssid: Array("first".utf8)),
            WiFiFixtures.accessPoint(2, -50),
            WiFiFixtures.accessPoint(1, -55, ssid: Array("second".utf8)),
            WiFiFixtures.accessPoint(1, -5, ssid: Array("out of range".utf8)),
            WiFiFixtures.accessPoint(1, -55, ssid: Array("third, as strong".utf8)),
        ]
        let usable = selection.usable(scan)
        #expect(usable.map(\.bssid) == [WiFiFixtures.bssid(2), WiFiFixtures.bssid(1)])
        #expect(usable[1].signal == -55)
        #expect(usable[1].ssid == Array("second".utf8))
    }

    @Test func ordersStrongestFirstAndKeepsAtMostTheMaximum() {
        let scan = (1...30).map { WiFiFixtures.accessPoint($0, -90 + $0 % 7 * 5) }
        let usable = selection.usable(scan)
        #expect(usable.count == 16)
        #expect(
            zip(usable, usable.dropFirst()).allSatisfy {
                $0.signal > $1.signal || ($0.signal == $1.signal && $0.bssid < $1.bssid)
            })
        let weakestKept = usable.last!.signal
        #expect(
            scan.filter { $0.signal > weakestKept }.allSatisfy { kept in usable.contains { $0.bssid == kept.bssid } })
        #expect(AccessPointSelection(maximumSent: 3).usable(scan).map(\.signal) == [-60, -60, -60])
        #expect(AccessPointSelection(maximumSent: 0).usable(scan).isEmpty)
        #expect(AccessPointSelection(maximumSent: -1).usable(scan).isEmpty)
    }

    @Test func aQueryNeedsTwoUsableAccessPoints() {
        #expect(selection.queryable([]) == nil)
        #expect(selection.queryable([WiFiFixtures.accessPoint(1, -50)]) == nil)
        #expect(selection.queryable([WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(1, -40)]) == nil)
        #expect(
            selection.queryable([
                WiFiFixtures.accessPoint(1, -50), station("02:00:00:00:00:01", ssid: "AndroidAP"),
                station("00:1a:2b:00:00:09", ssid: "x_nomap"),
            ])
                == nil)
        #expect(selection.queryable([WiFiFixtures.accessPoint(1, -50), WiFiFixtures.accessPoint(2, -40)])?.count == 2)
    }

    @Test func exclusionsExplainThemselves() {
        #expect(AccessPointSelection.Exclusion.movingNetwork.description == "a vehicle's network or a phone's hotspot")
        #expect(AccessPointSelection.Exclusion.optedOut.description == "the network name opts out of mapping")
    }
}
