import CGPSD
import Testing
import WhereaboutsCore
import WhereaboutsProviders

@testable import GPSD

@Suite("gpsd's SKY satellites, TPV status and DOPs")
struct GPSDSkyTests {
    static let tpv =
        #"{"class":"TPV","device":"/dev/pts/1","mode":3,"time":"2026-11-30T17:14:55.000Z","lat":46.5,"lon":7.25,"altMSL":500}"#

    /// A SKY of gpsd 3.22: two GPS (one used), an SBAS, GLONASS by its slot and a satellite without a position.
    static let sky =
        #"{"class":"SKY","device":"/dev/pts/1","hdop":0.9,"vdop":1.4,"pdop":1.7,"satellites":["#
        + #"{"PRN":5,"gnssid":0,"svid":5,"el":60.0,"az":100.0,"ss":45.0,"used":true},"#
        + #"{"PRN":13,"gnssid":0,"svid":13,"el":30.0,"az":200.0,"ss":0,"used":false},"#
        + #"{"PRN":133,"gnssid":1,"svid":133,"el":25.0,"az":150.0,"ss":35.0,"used":false},"#
        + #"{"PRN":70,"gnssid":6,"svid":6,"el":45.0,"az":60.0,"ss":33.0,"used":true,"health":1},"#
        + #"{"PRN":20,"gnssid":0,"svid":20,"used":false}]}"#

    /// `wb_parse_report_sky` on `text`: its result and the sky it filled.
    static func parse(_ text: String, _ sky: inout wb_gps_sky) -> Int32 {
        var dop = wb_gps_dop(hdop: .nan, vdop: .nan)
        var fix = wb_gps_fix()
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                wb_parse_report_sky($0.baseAddress, $0.count, &dop, &sky, &fix)
            }
        }
    }

    @Test func aSKYsSatellitesBecomeTheSky() throws {
        var reader = GPSDReportReader()
        #expect(reader.fix(from: Array(Self.sky.utf8), receivedAt: WallTime(microseconds: 0)) == nil)
        let taken = reader.takeSky()
        let sky = try #require(taken)
        #expect(reader.takeSky() == nil, "once")
        #expect(
            sky.map { "\($0.constellation.rawValue) \($0.id)" } == [
                "gps 5", "gps 13", "gps 20", "glonass 6", "sbas 133",
            ])
        #expect(sky.map(\.usedInFix) == [true, false, false, true, false])
        #expect(sky[0].elevation == 60 && sky[0].azimuth == 100 && sky[0].signalStrength == 45)
        #expect(sky[2].elevation == nil && sky[2].azimuth == nil && sky[2].signalStrength == nil)
        let read = reader.fix(from: Array(Self.tpv.utf8), receivedAt: WallTime(microseconds: 0))
        let fix = try #require(read)
        #expect(fix.fixType == .threeDimensional)
        #expect(fix.hdop == 0.9 && fix.vdop == 1.4 && fix.pdop == 1.7)
    }

    @Test func olderReportsNameSatellitesByPRNAlone() throws {
        var reader = GPSDReportReader()
        let old =
            #"{"class":"SKY","satellites":[{"PRN":70,"el":10,"az":20,"ss":30,"used":true},{"PRN":301,"used":false}]}"#
        _ = reader.fix(from: Array(old.utf8), receivedAt: WallTime(microseconds: 0))
        let taken = reader.takeSky()
        let sky = try #require(taken)
        #expect(sky.map { "\($0.constellation.rawValue) \($0.id)" } == ["glonass 6", "galileo 1"])
    }

    @Test func aSKYWithoutSatellitesKeepsTheSkyAsItWas() {
        var reader = GPSDReportReader()
        _ = reader.fix(from: Array(#"{"class":"SKY","hdop":1.0}"#.utf8), receivedAt: WallTime(microseconds: 0))
        #expect(reader.takeSky() == nil)
    }

    @Test func theStatusSaysDGPSAndRTK() {
        func fixType(_ status: Int) -> FixType? {
            var reader = GPSDReportReader()
            let tpv = Self.tpv.replacingOccurrences(of: #""mode":3"#, with: #""mode":3,"status":\#(status)"#)
            return reader.fix(from: Array(tpv.utf8), receivedAt: WallTime(microseconds: 0))?.fixType
        }
        #expect(fixType(1) == .threeDimensional)
        #expect(fixType(2) == .differential)
        #expect(fixType(3) == .rtkFixed)
        #expect(fixType(4) == .rtkFloat)
        var reader = GPSDReportReader()
        let twoD = Self.tpv.replacingOccurrences(of: #""mode":3"#, with: #""mode":2"#)
        #expect(reader.fix(from: Array(twoD.utf8), receivedAt: WallTime(microseconds: 0))?.fixType == .twoDimensional)
    }

    @Test func badSatellitesRefuseTheReportAndLeaveTheSkyAlone() {
        var sky = wb_gps_sky()
        #expect(Self.parse(Self.sky, &sky) == 2)
        #expect(sky.count == 5 && sky.has_satellites == 1 && sky.pdop == 1.7)
        for bad in [
            #"{"class":"SKY","satellites":[{"PRN":5,"el":91}]}"#, #"{"class":"SKY","satellites":[{"PRN":5,"az":-1}]}"#,
            #"{"class":"SKY","satellites":[{"PRN":5,"ss":120}]}"#, #"{"class":"SKY","satellites":[{"PRN":5.5}]}"#,
            #"{"class":"SKY","satellites":[{"PRN":5,"used":1}]}"#, #"{"class":"SKY","satellites":[{"el":5}]}"#,
            #"{"class":"SKY","satellites":[{"gnssid":0}]}"#, #"{"class":"SKY","satellites":[{"PRN":5,"PRN":6}]}"#,
            #"{"class":"SKY","satellites":{"PRN":5}}"#, #"{"class":"SKY","satellites":[{"PRN":5}],"satellites":[]}"#,
            #"{"class":"SKY","satellites":["# + Array(repeating: #"{"PRN":1}"#, count: 141).joined(separator: ",")
                + "]}",
        ] {
            #expect(Self.parse(bad, &sky) == -1, "\(bad)")
        }
        #expect(sky.count == 5, "a refused report leaves the sky as it was")
        #expect(
            Self.parse(
                #"{"class":"SKY","satellites":["# + Array(repeating: #"{"PRN":1}"#, count: 140).joined(separator: ",")
                    + "]}", &sky) == 2)
        #expect(sky.count == 140)
    }
}
