import Testing
import WhereaboutsCore

/// The cell in ModemManager's 3GPP location `text` for a modem on `technologies`, or the error.
private func cell(_ text: String, _ technologies: AccessTechnologies) -> Result<ServingCell, CellLocationError> {
    Result { () throws(CellLocationError) in
        try ServingCell(modemManagerLocation: text, accessTechnologies: technologies)
    }
}

/// The error parsing `text` for a modem on `technologies` gives, or nil when it parses.
private func error(_ text: String, _ technologies: AccessTechnologies) -> CellLocationError? {
    guard case .failure(let error) = cell(text, technologies) else { return nil }
    return error
}

@Suite("Cell locations from ModemManager")
struct CellLocationTests {
    @Test func aGSMCellIsReadFromTheLocationArea() throws {
        let gsm = try cell("262,01,1A2B,3C4D,0", [.gsm, .edge]).get()
        #expect(gsm.radio == .gsm)
        #expect(gsm.mobileCountryCode == 262)
        #expect(gsm.mobileNetworkCode == 1)
        #expect(gsm.areaCode == 0x1A2B)
        #expect(gsm.cellID == 0x3C4D)
        #expect(gsm.description == "gsm 262-1 LAC 1A2B CI 3C4D")
        // A tracking area the modem kept from elsewhere is not the GSM cell's.
        #expect(try cell("262,01,1A2B,3C4D,5A1F", .gprs).get() == gsm)
    }

    @Test func aUMTSCellHasItsOwnRadioAndTwentyEightBitID() throws {
        let umts = try cell("208,10,4E21,2B0C1F3,0", .hspaPlus).get()
        #expect(umts.radio == .wcdma)
        #expect(umts.mobileNetworkCode == 10)
        #expect(umts.areaCode == 0x4E21)
        #expect(umts.cellID == 0x2B0_C1F3)
        // GSM and UMTS towers with the same numbers are different cells.
        #expect(try cell("208,10,4E21,B0C1,0", .umts).get() != cell("208,10,4E21,B0C1,0", .gsm).get())
    }

    @Test func anLTECellIsReadFromTheTrackingArea() throws {
        let lte = try cell("310,410,0,8A1B2C3,5A1F", .lte).get()
        #expect(lte.radio == .lte)
        #expect(lte.mobileCountryCode == 310)
        #expect(lte.mobileNetworkCode == 410)
        #expect(lte.areaCode == 0x5A1F)
        #expect(lte.cellID == 0x8A1_B2C3)
        #expect(lte.description == "lte 310-410 TAC 5A1F CI 8A1B2C3")
        // A location area kept from a circuit-switched registration is not the LTE cell's; lower case is read.
        #expect(try cell("310,410,1f4,8a1b2c3,5a1f", .lte).get() == lte)
        #expect(try cell("310,410,0,8A1B2C3,5A1F", .lteCatM).get() == lte)
        #expect(try cell("310,410,0,8A1B2C3,5A1F", .lteNBIoT).get() == lte)
    }

    @Test func aStandaloneNRCellKeepsItsThirtySixBitIDAndTwentyFourBitArea() throws {
        let nr = try cell("262,01,0,1A2B3C4D5,1F0A3C", .nr).get()
        #expect(nr.radio == .nr)
        #expect(nr.areaCode == 0x1F_0A3C)
        #expect(nr.cellID == 0x1_A2B3_C4D5)
        #expect(try cell("262,01,0,FFFFFFFFE,FFFFFD", .nr).get().cellID == 0xF_FFFF_FFFE)
    }

    @Test func theMostAdvancedTechnologyPicksTheRadio() {
        let cases: [(AccessTechnologies, CellRadio?)] = [
            ([.lte, .umts], .lte),
            ([.hsdpa, .gprs], .wcdma),
            ([.umts, .gsm, .edge], .wcdma),
            ([.gsmCompact], .gsm),
            ([.nr], .nr),
            ([.nr, .hspa], .nr),
            // E-UTRA–NR dual connectivity: registered through the LTE anchor cell.
            ([.lte, .nr], .lte),
            ([.lteCatM, .nr], .lte),
            ([.lteNBIoT, .gsm], .lte),
            ([], nil),
            ([.pots], nil),
            ([.cdma1xRTT, .evdoA], nil),
            (.any, nil),
            (AccessTechnologies(rawValue: 1 << 20), nil),
        ]
        for (technologies, radio) in cases {
            #expect(technologies.cellRadio == radio, "\(technologies)")
        }
    }

    @Test func accessTechnologiesAreNamedAsModemManagerNamesThem() {
        #expect(AccessTechnologies([.lte, .nr]).description == "lte, 5gnr")
        #expect(AccessTechnologies(rawValue: 0x3_FFFF).description.hasPrefix("pots, gsm, gsm-compact, gprs, edge"))
        #expect(
            AccessTechnologies(rawValue: 0x3_FFFF).description.hasSuffix(
                "1xrtt, evdo0, evdoa, evdob, lte, 5gnr, lte-cat-m, lte-nb-iot"))
        #expect(AccessTechnologies(rawValue: 0).description == "unknown")
        #expect(AccessTechnologies.any.description == "any")
        #expect(AccessTechnologies(rawValue: 1 << 14 | 1 << 20).description == "lte, 0x100000")
    }

    @Test func noRadioIsNoCell() {
        #expect(error("262,01,1A2B,3C4D,0", []) == .noCellularRadio([]))
        #expect(error("262,01,1A2B,3C4D,0", .evdoB) == .noCellularRadio(.evdoB))
        #expect(error("262,01,1A2B,3C4D,0", .any) == .noCellularRadio(.any))
        #expect(error("", []) == .noCellularRadio([]))
        #expect(CellLocationError.noCellularRadio([]).description == "the modem reports no access technology")
        #expect(
            CellLocationError.noCellularRadio([.cdma1xRTT, .evdo0]).description
                == "the modem's access technologies (1xrtt, evdo0) have no 3GPP cell")
    }

    @Test func theLocationHasFiveFields() {
        #expect(error("262,01,1A2B,3C4D", .gsm) == .fieldCount(4))
        #expect(error("262,01,1A2B,3C4D,0,0", .gsm) == .fieldCount(6))
        #expect(error("", .gsm) == .fieldCount(1))
        #expect(error(",,,,", .gsm) == .malformedCountryCode(""))
    }

    @Test func theCodesAreDecimalDigits() {
        for text in ["26", "2620", "26a", "+26", "٢٦٢", " 262"] {
            #expect(error("\(text),01,1A2B,3C4D,0", .gsm) == .malformedCountryCode(text), "\(text)")
        }
        for text in ["1", "1234", "0x", "", "-1"] {
            #expect(error("262,\(text),1A2B,3C4D,0", .gsm) == .malformedNetworkCode(text), "\(text)")
        }
        #expect(
            CellLocationError.malformedCountryCode("26a").description
                == "mobile country code '26a' is not three decimal digits")
    }

    @Test func onlyCountriesCodesAreKept() throws {
        #expect(error("001,01,1A2B,3C4D,0", .gsm) == .countryCodeNotGeographic(1))
        #expect(error("901,70,1A2B,3C4D,0", .gsm) == .countryCodeNotGeographic(901))
        #expect(error("199,01,1A2B,3C4D,0", .gsm) == .countryCodeNotGeographic(199))
        #expect(error("800,01,1A2B,3C4D,0", .gsm) == .countryCodeNotGeographic(800))
        #expect(try cell("200,00,1A2B,3C4D,0", .gsm).get().mobileCountryCode == 200)
        #expect(try cell("799,999,1A2B,3C4D,0", .gsm).get().mobileNetworkCode == 999)
        #expect(
            CellLocationError.countryCodeNotGeographic(1).description
                == "mobile country code 001 is not a country's (200...799)")
    }

    @Test func theAreaAndCellFieldsAreHexadecimal() {
        #expect(error("262,01,1G2B,3C4D,0", .gsm) == .notHexadecimal(.locationAreaCode, "1G2B"))
        #expect(error("262,01,1A2B,,0", .gsm) == .notHexadecimal(.cellID, ""))
        #expect(error("262,01,1A2B,+3C4D,0", .gsm) == .notHexadecimal(.cellID, "+3C4D"))
        #expect(error("262,01,1A2B,0x3C4D,0", .gsm) == .notHexadecimal(.cellID, "0x3C4D"))
        // The field not used for the radio must still be well formed.
        #expect(error("310,410,-1,8A1B2C3,5A1F", .lte) == .notHexadecimal(.locationAreaCode, "-1"))
        #expect(error("310,410,0,8A1B2C3, 5A1F", .lte) == .notHexadecimal(.trackingAreaCode, " 5A1F"))
        #expect(
            CellLocationError.notHexadecimal(.cellID, "+3C4D").description == "cell ID '+3C4D' is not hexadecimal")
    }

    @Test func placeholdersForUnknownValuesAreNoCell() {
        #expect(error("262,01,0,3C4D,0", .gsm) == .unknownPlaceholder(.locationAreaCode, 0))
        #expect(error("262,01,FFFE,3C4D,0", .gsm) == .unknownPlaceholder(.locationAreaCode, 0xFFFE))
        #expect(error("262,01,FFFF,3C4D,0", .umts) == .unknownPlaceholder(.locationAreaCode, 0xFFFF))
        #expect(error("310,410,1F4,8A1B2C3,0", .lte) == .unknownPlaceholder(.trackingAreaCode, 0))
        #expect(error("310,410,0,8A1B2C3,FFFF", .lte) == .unknownPlaceholder(.trackingAreaCode, 0xFFFF))
        #expect(error("262,01,0,1A2B3C4D5,FFFFFF", .nr) == .unknownPlaceholder(.trackingAreaCode, 0xFF_FFFF))
        #expect(error("262,01,0,1A2B3C4D5,FFFFFE", .nr) == .unknownPlaceholder(.trackingAreaCode, 0xFF_FFFE))
        #expect(error("262,01,1A2B,0,0", .gsm) == .unknownPlaceholder(.cellID, 0))
        #expect(error("262,01,1A2B,FFFF,0", .gsm) == .unknownPlaceholder(.cellID, 0xFFFF))
        #expect(error("262,01,1A2B,FFFFFFFF,0", .gsm) == .unknownPlaceholder(.cellID, 0xFFFF_FFFF))
        #expect(error("208,10,4E21,FFFFFFFE,0", .umts) == .unknownPlaceholder(.cellID, 0xFFFF_FFFE))
        #expect(error("310,410,0,FFFFFFF,5A1F", .lte) == .unknownPlaceholder(.cellID, 0xFFF_FFFF))
        #expect(error("262,01,0,FFFFFFFFF,1F0A3C", .nr) == .unknownPlaceholder(.cellID, 0xF_FFFF_FFFF))
        #expect(error("262,01,0,FFFFFFFF,1F0A3C", .nr) == .unknownPlaceholder(.cellID, 0xFFFF_FFFF))
        #expect(
            CellLocationError.unknownPlaceholder(.locationAreaCode, 0xFFFE).description
                == "location area code FFFE is what modems report when they do not know it")
    }

    @Test func valuesTooLargeForTheRadioAreRefused() throws {
        #expect(error("262,01,1A2B,10000,0", .gsm) == .outOfRange(.cellID, 0x10000, .gsm))
        #expect(error("208,10,4E21,10000000,0", .umts) == .outOfRange(.cellID, 0x1000_0000, .wcdma))
        #expect(error("310,410,0,10000000,5A1F", .lte) == .outOfRange(.cellID, 0x1000_0000, .lte))
        #expect(error("262,01,0,1000000000,1F0A3C", .nr) == .outOfRange(.cellID, 0x10_0000_0000, .nr))
        #expect(error("262,01,10000,3C4D,0", .gsm) == .outOfRange(.locationAreaCode, 0x10000, .gsm))
        #expect(error("310,410,0,8A1B2C3,10000", .lte) == .outOfRange(.trackingAreaCode, 0x10000, .lte))
        #expect(error("262,01,0,1A2B3C4D5,1000000", .nr) == .outOfRange(.trackingAreaCode, 0x100_0000, .nr))
        #expect(error("262,01,1A2B,1FFFFFFFFFFFFFFFF,0", .gsm) == .outOfRange(.cellID, Int.max, .gsm))
        // The largest values that are not placeholders.
        #expect(try cell("262,01,FFFD,FFFE,0", .gsm).get().cellID == 0xFFFE)
        #expect(try cell("310,410,0,FFFFFFE,FFFD", .lte).get().areaCode == 0xFFFD)
        #expect(
            CellLocationError.outOfRange(.cellID, 0x10000, .gsm).description == "cell ID 10000 is out of range for gsm")
    }

    @Test func aCellMadeDirectlyIsCheckedTheSameWay() throws {
        #expect(throws: CellLocationError.malformedNetworkCode("1000")) {
            try ServingCell(radio: .lte, mobileCountryCode: 262, mobileNetworkCode: 1000, areaCode: 1, cellID: 1)
        }
        #expect(throws: CellLocationError.malformedNetworkCode("-1")) {
            try ServingCell(radio: .lte, mobileCountryCode: 262, mobileNetworkCode: -1, areaCode: 1, cellID: 1)
        }
        #expect(throws: CellLocationError.outOfRange(.trackingAreaCode, -5, .lte)) {
            try ServingCell(radio: .lte, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: -5, cellID: 1)
        }
        #expect(throws: CellLocationError.outOfRange(.cellID, -1, .gsm)) {
            try ServingCell(radio: .gsm, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: 1, cellID: -1)
        }
        let made = try ServingCell(
            radio: .wcdma, mobileCountryCode: 208, mobileNetworkCode: 10, areaCode: 0x4E21, cellID: 0x2B0_C1F3)
        #expect(try made == cell("208,10,4E21,2B0C1F3,0", .hsupa).get())
    }

    @Test func radiosHaveTheirIchnaeaNamesAndWidths() {
        #expect(CellRadio.allCases.map(\.ichnaeaName) == ["gsm", "wcdma", "lte", "nr"])
        #expect(CellRadio.allCases.map(\.largestCellID) == [0xFFFF, 0xFFF_FFFF, 0xFFF_FFFF, 0xF_FFFF_FFFF])
        #expect(CellRadio.allCases.map(\.largestAreaCode) == [0xFFFF, 0xFFFF, 0xFFFF, 0xFF_FFFF])
        #expect(CellRadio.allCases.map(\.hasTrackingArea) == [false, false, true, true])
    }

    @Test func aCDMABaseStationIsAPlace() throws {
        let station = try CDMABaseStation(latitude: 40.7128, longitude: -74.006)
        #expect(station.latitude == 40.7128)
        #expect(station.longitude == -74.006)
        #expect(try CDMABaseStation(latitude: -90, longitude: 180).latitude == -90)
        #expect(try CDMABaseStation(latitude: 0, longitude: 0.5).longitude == 0.5)
        #expect(CDMABaseStation.assumedAccuracy == 1_000)
        for (latitude, longitude) in [
            (0.0, 0.0), (90.5, 0), (-91, 0), (0, 180.5), (0, -181), (.nan, 1), (1, .infinity),
            (-Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude),
        ] {
            #expect(
                throws: CellLocationError.self, "\(latitude), \(longitude)",
                performing: { try CDMABaseStation(latitude: latitude, longitude: longitude) })
        }
        #expect(
            CellLocationError.invalidBaseStationPosition(latitude: 0, longitude: 0).description
                == "base station position 0.0, 0.0 is not a place")
    }
}
