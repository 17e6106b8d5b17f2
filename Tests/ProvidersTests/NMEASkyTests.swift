import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// Decodes a GSV body, failing the test when it is not one.
private func gsv(_ body: String) throws -> NMEASentence.GSV {
    guard case .gsv(let gsv) = try NMEASentence(parsing: nmea(body)).content else { throw NMEAError.empty }
    return gsv
}

/// The error decoding `body` throws, if any.
private func refusal(_ body: String) -> NMEAError? {
    do {
        _ = try NMEASentence(parsing: nmea(body))
        return nil
    } catch {
        return error
    }
}

/// Feeds every body to one assembler; the skies it gave, in order.
private func skies(_ bodies: [String], into assembler: inout NMEASkyAssembler) throws -> [[Satellite]] {
    try bodies.compactMap { assembler.add(try NMEASentence(parsing: nmea($0))) }
}

private func skies(_ bodies: [String]) throws -> [[Satellite]] {
    var assembler = NMEASkyAssembler()
    return try skies(bodies, into: &assembler)
}

/// A satellite's constellation, id and whether it is used, for short comparisons.
private func ids(_ sky: [Satellite]) -> [String] {
    sky.map { "\($0.constellation.rawValue) \($0.id)\($0.usedInFix ? " used" : "")" }
}

@Suite("NMEA satellites in view")
struct NMEASkyTests {
    @Test func decodesAGSVPartWithItsSignalID() throws {
        let part = try gsv("GAGSV,2,1,05,02,45,123,38,07,12,310,,11,,,22,30,80,001,41,7")
        #expect(part.partCount == 2 && part.partNumber == 1 && part.satellitesInView == 5)
        #expect(part.signalID == 7)
        #expect(part.satellites.map(\.number) == [2, 7, 11, 30])
        #expect(part.satellites[0].elevation == 45 && part.satellites[0].azimuth == 123)
        #expect(part.satellites[0].signalStrength == 38)
        #expect(part.satellites[1].signalStrength == nil, "an empty C/N0 is a satellite not tracked")
        #expect(part.satellites[2].elevation == nil && part.satellites[2].azimuth == nil)
        let last = try gsv("GPGSV,1,1,02,05,10,360,20,,,,")
        #expect(last.satellites.count == 1, "empty padding groups are left out")
        #expect(last.satellites[0].azimuth == 0)
        #expect(try gsv("GLGSV,1,1,00").satellites.isEmpty)
    }

    @Test func refusesBadGSVParts() {
        #expect(
            refusal("GPGSV,2,3,08,01,10,100,20") == .invalidField(sentence: "GSV", field: "part number", value: "3"))
        #expect(refusal("GPGSV,0,1,08") == .invalidField(sentence: "GSV", field: "part count", value: "0"))
        #expect(refusal("GPGSV,1,1") == .tooFewFields(sentence: "GSV", count: 2, required: 3))
        #expect(refusal("GPGSV,1,,01,01,10,100,20") == .missingField(sentence: "GSV", field: "part number"))
        #expect(
            refusal("GPGSV,1,1,01,01,10,100,20,02,10,100,20")
                == .invalidField(sentence: "GSV", field: "satellite count", value: "2"),
            "more satellites than the sequence says it has")
        #expect(refusal("GPGSV,1,1,01,01,91,100,20") == .invalidField(sentence: "GSV", field: "elevation", value: "91"))
        #expect(refusal("GPGSV,1,1,01,01,10,361,20") == .invalidField(sentence: "GSV", field: "azimuth", value: "361"))
        #expect(refusal("GPGSV,1,1,01,01,10,100,-3") == .invalidField(sentence: "GSV", field: "C/N0", value: "-3"))
        #expect(refusal("GPGSV,1,1,01,,10,100,20") == .missingField(sentence: "GSV", field: "satellite number"))
        #expect(refusal("GPGSV,1,1,01,01,10,100") == .invalidField(sentence: "GSV", field: "field count", value: "6"))
        #expect(
            refusal("GPGSV,1,1,01,01,10,100,20,X") == .invalidField(sentence: "GSV", field: "signal id", value: "X"))
    }

    @Test func decodesGSASatellitesAndSystemID() throws {
        guard case .gsa(let gsa) = try NMEASentence(parsing: nmea("GNGSA,A,3,65,71,,,,,,,,,,,1.8,1.0,1.5,2")).content
        else { throw NMEAError.empty }
        #expect(gsa.satellitesUsed == [65, 71])
        #expect(gsa.systemID == 2)
        #expect(refusal("GNGSA,A,3,65,XX,,,,,,,,,,,1.8,1.0,1.5,2") != nil)
        #expect(refusal("GNGSA,A,3,65,,,,,,,,,,,,1.8,1.0,1.5,G") != nil)
    }

    @Test func aSequenceCountsOnceWholeAndMarksWhatGSAUses() throws {
        let given = try skies([
            "GPGSA,A,3,05,13,,,,,,,,,,,2.0,1.1,1.7",
            "GPGSV,2,1,05,05,60,100,45,13,30,200,40,20,10,300,,24,05,010,22",
        ])
        #expect(given.isEmpty, "not before its last part")
        let whole = try skies([
            "GPGSA,A,3,05,13,,,,,,,,,,,2.0,1.1,1.7",
            "GPGSV,2,1,05,05,60,100,45,13,30,200,40,20,10,300,,24,05,010,22",
            "GPGSV,2,2,05,46,25,150,35",
        ])
        #expect(whole.count == 1)
        #expect(ids(whole[0]) == ["gps 5 used", "gps 13 used", "gps 20", "gps 24", "sbas 133"])
        #expect(whole[0][0].elevation == 60 && whole[0][0].azimuth == 100 && whole[0][0].signalStrength == 45)
        #expect(whole[0][2].signalStrength == nil)
    }

    @Test func aBrokenSequenceIsDropped() throws {
        #expect(
            try skies([
                "GPGSV,3,1,09,01,10,100,20,02,10,100,20,03,10,100,20,04,10,100,20",
                "GPGSV,3,3,09,09,10,100,20",
            ]).isEmpty, "a part skipped")
        #expect(
            try skies([
                "GPGSV,3,1,09,01,10,100,20,02,10,100,20,03,10,100,20,04,10,100,20",
                "GPGSV,2,2,05,05,10,100,20",
            ]).isEmpty, "a part of another length")
        #expect(try skies(["GPGSV,2,2,05,05,10,100,20"]).isEmpty, "no first part")
        #expect(
            try skies([
                "GPGSV,2,1,05,01,10,100,20,02,10,100,20,03,10,100,20,04,10,100,20",
                "GPGSV,2,2,05,05,10,100,20,06,10,100,20",
            ]).isEmpty, "more satellites than the sequence has")
        #expect(
            try skies([
                "GPGSV,2,1,05,01,10,100,20,02,10,100,20,03,10,100,20,04,10,100,20",
                "GPGSV,2,2,06,05,10,100,20",
            ]).isEmpty, "a part of another count")
        #expect(
            try skies([
                "GPGSV,3,1,06,01,10,100,20,02,10,100,20", "GPGSV,3,2,06,03,10,100,20,04,10,100,20",
                "GPGSV,3,3,06,05,10,100,20,06,10,100,20",
            ]).count == 1, "parts of fewer than four, as some receivers send them")
    }

    @Test func talkersAndSignalsMakeOneSky() throws {
        var assembler = NMEASkyAssembler()
        let given = try skies(
            [
                "GNGSA,A,3,02,,,,,,,,,,,,1.8,1.0,1.5,1",
                "GNGSA,A,3,67,,,,,,,,,,,,1.8,1.0,1.5,2",
                "GNGSA,A,3,11,,,,,,,,,,,,1.8,1.0,1.5,3",
                "GNGSA,A,3,,,,,,,,,,,,,1.8,1.0,1.5,4",
                "GPGSV,1,1,01,02,50,090,40,1",
                "GPGSV,1,1,01,02,50,090,44,8",
                "GLGSV,1,1,02,67,20,180,30,68,10,190,",
                "GAGSV,1,1,01,11,70,010,47,7",
                "GBGSV,1,1,01,06,15,250,28",
                "GQGSV,1,1,01,02,80,100,43",
                "GIGSV,1,1,01,05,35,140,31",
            ], into: &assembler)
        #expect(given.count == 7, "one sky a sequence")
        let sky = try #require(given.last)
        #expect(
            ids(sky) == [
                "gps 2 used", "glonass 3 used", "glonass 4", "galileo 11 used", "beidou 6", "qzss 2", "navic 5",
            ])
        #expect(sky[0].signalStrength == 44, "a satellite on two signals once, with its strongest")
        let emptied = try skies(["GLGSV,1,1,00"], into: &assembler)
        #expect(!ids(try #require(emptied.first)).contains { $0.hasPrefix("glonass") })
    }

    @Test func oneRangeNumbersFollowTheTable() throws {
        let sky = try #require(
            try skies([
                "GNGSA,A,3,04,70,,,,,,,,,,,2.0,1.1,1.7",
                "GPGSV,3,1,09,04,40,100,40,45,30,200,35,70,20,300,30,195,50,010,41",
                "GPGSV,3,2,09,205,10,020,20,305,45,030,33,405,15,040,25,130,05,050,12",
                "GPGSV,3,3,09,500,10,060,10",
            ]).last)
        #expect(
            ids(sky) == ["gps 4 used", "glonass 6 used", "galileo 5", "beidou 5", "qzss 3", "sbas 130", "sbas 132"],
            "a number in no range (500) names no satellite; BeiDou's 205 and 405 are one")
        #expect(sky.first { $0.constellation == .beidou }?.signalStrength == 25)
    }

    @Test func theFixCarriesItsTypeAndDOPs() throws {
        func fix(_ lines: [String]) throws -> Fix? {
            var assembler = NMEAFixAssembler(provider: .nmea)
            var fixes: [Fix] = []
            for line in lines { if let fix = try assembler.add(line: Array(line.utf8)) { fixes.append(fix) } }
            return fixes.last ?? assembler.finish()
        }
        let threeD = try #require(
            try fix([NMEAFixture.gga("120000"), NMEAFixture.gsa(), NMEAFixture.rmc("120000")]))
        #expect(threeD.fixType == .threeDimensional)
        #expect(threeD.hdop == 0.9 && threeD.vdop == 2.1 && threeD.pdop == 2.5)
        let twoD = try #require(
            try fix([NMEAFixture.gga("120000"), NMEAFixture.gsa(mode: 2), NMEAFixture.rmc("120000")]))
        #expect(twoD.fixType == .twoDimensional)
        #expect(try fix([NMEAFixture.gga("120000", quality: 2), NMEAFixture.rmc("120000")])?.fixType == .differential)
        #expect(try fix([NMEAFixture.gga("120000", quality: 4), NMEAFixture.rmc("120000")])?.fixType == .rtkFixed)
        #expect(try fix([NMEAFixture.gga("120000", quality: 5), NMEAFixture.rmc("120000")])?.fixType == .rtkFloat)
        let ggaAlone = try #require(try fix([NMEAFixture.gga("120000"), NMEAFixture.rmc("120000")]))
        #expect(ggaAlone.fixType == .threeDimensional, "a GGA with an altitude, as gpsd reads it")
        #expect(ggaAlone.vdop == nil && ggaAlone.pdop == nil)
        #expect(try fix([NMEAFixture.rmc("120000")])?.fixType == FixType.none)
    }
}
