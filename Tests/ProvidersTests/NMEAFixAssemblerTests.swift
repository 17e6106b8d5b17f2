import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// 2024-03-15T00:00:00Z.
let march15 = WallTime(microseconds: 1_710_460_800_000_000)

/// The 95% horizontal radius per unit of HDOP × UERE: 2.4477 / √2.
let horizontalFactor = 2.447_746_830_680_816 / 2.0.squareRoot()

/// The instant `hours:minutes:seconds` after `day`.
func utc(_ day: WallTime, _ hours: Int, _ minutes: Int, _ seconds: Double) -> WallTime {
    day.advanced(by: .seconds(hours * 3600 + minutes * 60) + .milliseconds(Int64((seconds * 1000).rounded())))
}

/// Feeds lines to an assembler; returns every fix it produced, including the one `finish()` flushes.
func assembleFixes(_ lines: [String], into assembler: inout NMEAFixAssembler) throws -> [Fix] {
    var fixes: [Fix] = []
    for line in lines {
        if let fix = try assembler.add(line: Array(line.utf8)) { fixes.append(fix) }
    }
    if let fix = assembler.finish() { fixes.append(fix) }
    return fixes
}

/// Feeds lines to a fresh live-NMEA assembler.
func assembleFixes(_ lines: [String], fallbackDate: WallTime? = nil) throws -> [Fix] {
    var assembler = NMEAFixAssembler(provider: .nmea, fallbackDate: fallbackDate)
    return try assembleFixes(lines, into: &assembler)
}

/// Sentence builders for one epoch at `time` (hhmmss[.ss]).
enum NMEAFixture {
    static func gga(_ time: String, quality: Int = 1, hdop: String = "0.9") -> String {
        nmea("GPGGA,\(time),4807.038,N,01131.000,E,\(quality),08,\(hdop),545.4,M,46.9,M,,")
    }

    static func rmc(_ time: String, status: String = "A") -> String {
        nmea("GPRMC,\(time),\(status),4807.038,N,01131.000,E,010.0,084.4,150324,003.1,W,A")
    }

    static func gsa(mode: Int = 3, vdop: String = "2.1") -> String {
        nmea("GNGSA,A,\(mode),04,05,,09,12,,,24,,,,,2.5,1.3,\(vdop)")
    }

    static func gst(_ time: String, lat: String = "1.5", lon: String = "2.0", alt: String = "3.0") -> String {
        nmea("GPGST,\(time),1.2,3.0,2.0,45.0,\(lat),\(lon),\(alt)")
    }

    static let vtg = nmea("GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A")

    static let gsv = nmea("GPGSV,3,1,11,03,03,111,00,04,15,270,00,06,01,010,00,13,06,292,00")
}

@Suite("NMEA fix assembly")
struct NMEAFixAssemblerTests {
    @Test func groupsGGAAndRMCOfOneEpochIntoOneFix() throws {
        var assembler = NMEAFixAssembler(provider: .nmea)
        #expect(try assembler.add(line: Array(NMEAFixture.gga("123519").utf8)) == nil)
        let fix = try #require(try assembler.add(line: Array(NMEAFixture.rmc("123519").utf8)))
        #expect(assembler.finish() == nil)

        #expect(fix.description == "NMEA GGA+RMC")
        #expect(fix.provider == .nmea)
        #expect(!fix.isSimulated)
        #expect(fix.timestamp == utc(march15, 12, 35, 19))
        #expect(abs(fix.latitude - (48 + 7.038 / 60)) < 1e-12)
        #expect(abs(fix.longitude - (11 + 31.0 / 60)) < 1e-12)
        #expect(abs(fix.horizontalAccuracy - horizontalFactor * 0.9 * 4) < 1e-9)
        #expect(fix.altitude == 545.4)
        #expect(abs(try #require(fix.ellipsoidalAltitude) - 592.3) < 1e-9)
        #expect(fix.verticalAccuracy == nil)
        #expect(abs(try #require(fix.speed) - 10 * 1852 / 3600) < 1e-12)
        #expect(fix.course == 84.4)
    }

    @Test func emitsOneFixPerEpochNotPerSentence() throws {
        var lines: [String] = []
        for second in 0..<5 {
            let time = "12000\(second)"
            lines += [NMEAFixture.gga(time), NMEAFixture.gsa(), NMEAFixture.gsv, NMEAFixture.rmc(time)]
        }
        let fixes = try assembleFixes(lines)
        #expect(fixes.count == 5)
        #expect(fixes.map(\.timestamp) == (0..<5).map { utc(march15, 12, 0, Double($0)) })
        #expect(fixes.allSatisfy { $0.description == "NMEA GGA+RMC+GSA" })
    }

    @Test func emitsAnIncompleteEpochWhenTheNextOneStarts() throws {
        var assembler = NMEAFixAssembler(provider: .nmea, fallbackDate: march15)
        #expect(try assembler.add(line: Array(NMEAFixture.gga("120000").utf8)) == nil)
        #expect(try assembler.add(line: Array(NMEAFixture.gsa().utf8)) == nil)
        let first = try #require(try assembler.add(line: Array(NMEAFixture.gga("120001").utf8)))
        #expect(first.timestamp == utc(march15, 12, 0, 0))
        #expect(first.description == "NMEA GGA+GSA")
        let finished = assembler.finish()
        let last = try #require(finished)
        #expect(last.timestamp == utc(march15, 12, 0, 1))
        #expect(assembler.finish() == nil)
    }

    @Test func handlesTenHertzEpochs() throws {
        let times = ["120000.00", "120000.10", "120000.20"]
        let fixes = try assembleFixes(times.flatMap { [NMEAFixture.rmc($0), NMEAFixture.gga($0)] })
        #expect(fixes.map(\.timestamp) == [0.0, 0.1, 0.2].map { utc(march15, 12, 0, $0) })
    }

    @Test func carriesSentencesThatArriveAfterTheirEpochClosed() throws {
        // u-blox order: RMC, VTG, GGA (the epoch closes here), then GSA, GSV, GST of the same epoch.
        var lines: [String] = []
        for time in ["120000", "120001"] {
            lines += [
                NMEAFixture.rmc(time), NMEAFixture.vtg, NMEAFixture.gga(time), NMEAFixture.gsa(), NMEAFixture.gsv,
                NMEAFixture.gst(time),
            ]
        }
        let fixes = try assembleFixes(lines)
        #expect(fixes.count == 2)
        #expect(fixes[0].description == "NMEA GGA+RMC")
        #expect(abs(fixes[0].horizontalAccuracy - horizontalFactor * 0.9 * 4) < 1e-9)
        #expect(fixes[0].verticalAccuracy == nil)

        #expect(fixes[1].description == "NMEA GGA+RMC+GSA+GST")
        let sigma = ((1.5 * 1.5 + 2.0 * 2.0) / 2).squareRoot()
        #expect(abs(fixes[1].horizontalAccuracy - 2.447_746_830_680_816 * sigma) < 1e-9)
        #expect(abs(try #require(fixes[1].verticalAccuracy) - 1.959_963_984_540_054 * 3.0) < 1e-9)
    }

    @Test func prefersTheEpochsOwnSentencesOverCarriedOnes() throws {
        let lines = [
            NMEAFixture.rmc("120000"), NMEAFixture.gga("120000"), NMEAFixture.gst("120000", lat: "9.0", lon: "9.0"),
            NMEAFixture.gga("120001"), NMEAFixture.gst("120001", lat: "1.0", lon: "1.0"), NMEAFixture.rmc("120001"),
        ]
        let fixes = try assembleFixes(lines)
        #expect(fixes.count == 2)
        #expect(abs(fixes[1].horizontalAccuracy - 2.447_746_830_680_816) < 1e-9)
    }

    @Test func usesVDOPForVerticalAccuracy() throws {
        let fix = try #require(
            try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.gsa(vdop: "2.0"), NMEAFixture.rmc("120000")])
                .first)
        #expect(abs(try #require(fix.verticalAccuracy) - 1.959_963_984_540_054 * 2.0 * 4) < 1e-9)
    }

    @Test func dropsTheAltitudeOfATwoDimensionalFix() throws {
        let fix = try #require(
            try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.gsa(mode: 2), NMEAFixture.rmc("120000")]).first)
        #expect(fix.altitude == nil)
        #expect(fix.ellipsoidalAltitude == nil)
        #expect(fix.verticalAccuracy == nil)
    }

    @Test func usesTheDifferentialUEREForDifferentialFixes() throws {
        for quality in [2, 4, 5] {
            let fix = try #require(
                try assembleFixes([NMEAFixture.gga("120000", quality: quality), NMEAFixture.rmc("120000")]).first)
            #expect(abs(fix.horizontalAccuracy - horizontalFactor * 0.9 * 1) < 1e-9)
        }
    }

    @Test func neverReportsZeroAccuracyForUnknownFigures() throws {
        let rmcOnly = try #require(try assembleFixes([NMEAFixture.rmc("120000")]).first)
        #expect(rmcOnly.description == "NMEA RMC")
        #expect(abs(rmcOnly.horizontalAccuracy - horizontalFactor * 2 * 4) < 1e-9)
        #expect(rmcOnly.altitude == nil)

        let zeros = [
            NMEAFixture.gga("120000", hdop: "0.0"), NMEAFixture.gst("120000", lat: "0", lon: "0", alt: "0"),
            NMEAFixture.rmc("120000"),
        ]
        let zeroFix = try #require(try assembleFixes(zeros).first)
        #expect(abs(zeroFix.horizontalAccuracy - horizontalFactor * 2 * 4) < 1e-9)
        #expect(zeroFix.verticalAccuracy == nil)
        #expect(zeroFix.description == "NMEA GGA+RMC")
    }

    @Test func ignoresEpochsWithoutAValidFix() throws {
        #expect(
            try assembleFixes([NMEAFixture.gga("120000", quality: 0), NMEAFixture.rmc("120000", status: "V")]).isEmpty)
        #expect(try assembleFixes([NMEAFixture.gga("120000", quality: 0), NMEAFixture.rmc("120000")]).isEmpty)
        #expect(try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.rmc("120000", status: "V")]).isEmpty)
        #expect(
            try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.gsa(mode: 1), NMEAFixture.rmc("120000")]).isEmpty)
        #expect(try assembleFixes([nmea("GPGGA,,,,,,0,00,99.99,,,,,,"), nmea("GPRMC,,V,,,,,,,,,,N")]).isEmpty)
        #expect(try assembleFixes([NMEAFixture.gst("120000"), NMEAFixture.gsa(), NMEAFixture.vtg]).isEmpty)
        let noFixThenFix = [
            NMEAFixture.gga("120000", quality: 0), NMEAFixture.rmc("120000", status: "V"),
            NMEAFixture.gga("120001"), NMEAFixture.rmc("120001"),
        ]
        #expect(try assembleFixes(noFixThenFix).map(\.timestamp) == [utc(march15, 12, 0, 1)])
    }

    @Test func aCarriedNoFixGSADoesNotVetoTheNextEpoch() throws {
        let lines = [
            NMEAFixture.rmc("120000", status: "V"), NMEAFixture.gga("120000", quality: 0), NMEAFixture.gsa(mode: 1),
            NMEAFixture.rmc("120001"), NMEAFixture.gga("120001"), NMEAFixture.gsa(),
        ]
        let fixes = try assembleFixes(lines)
        #expect(fixes.count == 1)
        #expect(fixes.first?.description == "NMEA GGA+RMC")
        #expect(fixes.first?.altitude == 545.4)
    }

    @Test func datesGGAOnlyEpochsFromTheLastRMC() throws {
        let lines = [
            NMEAFixture.gga("235959"), NMEAFixture.rmc("235959"), NMEAFixture.gga("000000"), NMEAFixture.gga("000001"),
        ]
        let fixes = try assembleFixes(lines)
        let nextDay = march15.advanced(by: .seconds(86_400))
        #expect(fixes.map(\.timestamp) == [utc(march15, 23, 59, 59), utc(nextDay, 0, 0, 0), utc(nextDay, 0, 0, 1)])
    }

    @Test func datesGGAOnlyStreamsNearTheFallbackDate() throws {
        #expect(try assembleFixes([NMEAFixture.gga("120000")]).isEmpty)
        let justAfterMidnight = utc(march15, 0, 0, 1)
        let lines = [NMEAFixture.gga("235958"), NMEAFixture.gga("235959"), NMEAFixture.gga("000000")]
        let fixes = try assembleFixes(lines, fallbackDate: justAfterMidnight)
        let dayBefore = march15.advanced(by: .seconds(-86_400))
        #expect(fixes.map(\.timestamp) == [utc(dayBefore, 23, 59, 58), utc(dayBefore, 23, 59, 59), march15])
        let noon = try assembleFixes([NMEAFixture.gga("120000")], fallbackDate: utc(march15, 9, 0, 0))
        #expect(noon.map(\.timestamp) == [utc(march15, 12, 0, 0)])
        let beforeEpoch = try assembleFixes([NMEAFixture.gga("230000")], fallbackDate: WallTime(microseconds: 0))
        #expect(beforeEpoch.map(\.timestamp) == [WallTime(microseconds: -3_600_000_000)])
    }

    @Test func takesSpeedAndCourseFromVTGWhenRMCLacksThem() throws {
        let fix = try #require(
            try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.vtg], fallbackDate: march15).first)
        #expect(fix.description == "NMEA GGA+VTG")
        #expect(fix.course == 54.7)
        #expect(abs(try #require(fix.speed) - 5.5 * 1852 / 3600) < 1e-12)

        let withRMC = try #require(
            try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.vtg, NMEAFixture.rmc("120000")]).first)
        #expect(withRMC.description == "NMEA GGA+RMC")
        #expect(withRMC.course == 84.4)
    }

    @Test func ignoresDuplicateSentencesOfAClosedEpoch() throws {
        let lines = [
            NMEAFixture.gga("120000"), NMEAFixture.rmc("120000"),
            nmea("GNGGA,120000,4900.000,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
            NMEAFixture.rmc("120000"),
        ]
        let fixes = try assembleFixes(lines)
        #expect(fixes.count == 1)
        #expect(fixes[0].latitude < 49)
    }

    @Test func stampsTheCallersProviderAndSimulationFlag() throws {
        var assembler = NMEAFixAssembler(provider: .replay, isSimulated: true)
        let fixes = try assembleFixes([NMEAFixture.gga("120000"), NMEAFixture.rmc("120000")], into: &assembler)
        #expect(fixes.first?.provider == .replay)
        #expect(fixes.first?.isSimulated == true)
    }

    @Test func rejectsBadLinesWithoutLosingTheEpoch() throws {
        var assembler = NMEAFixAssembler(provider: .nmea)
        #expect(try assembler.add(line: Array(NMEAFixture.gga("120000").utf8)) == nil)
        #expect(throws: NMEAError.self) { try assembler.add(line: Array("$GPRMC,garbage*00".utf8)) }
        #expect(throws: NMEAError.missingStartDelimiter) { try assembler.add(line: [0, 1, 2, 3]) }
        #expect(try assembler.add(line: Array(NMEAFixture.rmc("120000").utf8)) != nil)
    }
}
