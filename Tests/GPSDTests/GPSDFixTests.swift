import CGPSD
import Testing
import WhereaboutsCore

@testable import GPSD

/// A 3D report with every field unknown but the position.
func report(
    mode: Int32 = 3, latitude: Double = 48.1175, longitude: Double = 11.5167, eph: Double = .nan,
    epx: Double = .nan, epy: Double = .nan, hdop: Double = .nan
) -> wb_gps_fix {
    var raw = wb_gps_fix()
    raw.mode = mode
    raw.latitude = latitude
    raw.longitude = longitude
    raw.altitude_msl = .nan
    raw.altitude_hae = .nan
    raw.eph = eph
    raw.epx = epx
    raw.epy = epy
    raw.epv = .nan
    raw.speed = .nan
    raw.eps = .nan
    raw.track = .nan
    raw.epd = .nan
    raw.climb = .nan
    raw.epc = .nan
    raw.hdop = hdop
    raw.vdop = .nan
    return raw
}

let received = WallTime(microseconds: 1_710_506_104_000_000)

@Suite("gpsd reports to fixes")
struct GPSDFixTests {
    @Test func everyFieldIsCarriedOver() throws {
        var raw = report(eph: 17.1)
        raw.altitude_msl = 545.4
        raw.altitude_hae = 592.3
        raw.epv = 34.5
        raw.speed = 11.524
        raw.eps = 0.8
        raw.track = 84.4
        raw.epd = 3.5
        raw.climb = -0.25
        raw.epc = 0.4
        raw.time_seconds = 1_710_506_104
        raw.time_nanoseconds = 250_000_000
        let fix = try #require(GPSDFix.fix(from: raw, receivedAt: WallTime(microseconds: 0)))
        #expect(fix.latitude == 48.1175 && fix.longitude == 11.5167)
        #expect(fix.horizontalAccuracy == 17.1)
        #expect(fix.altitude == 545.4 && fix.ellipsoidalAltitude == 592.3 && fix.verticalAccuracy == 34.5)
        #expect(fix.speed == 11.524 && fix.speedAccuracy == 0.8)
        #expect(fix.course == 84.4 && fix.courseAccuracy == 3.5)
        #expect(fix.climb == -0.25 && fix.climbAccuracy == 0.4)
        #expect(fix.timestamp == WallTime(microseconds: 1_710_506_104_250_000))
        #expect(fix.provider == .gpsd && !fix.isSimulated && fix.description == "gpsd 3D fix")
    }

    @Test func unknownValuesStayUnknown() throws {
        let fix = try #require(GPSDFix.fix(from: report(eph: 5), receivedAt: received))
        #expect(fix.altitude == nil && fix.ellipsoidalAltitude == nil && fix.verticalAccuracy == nil)
        #expect(fix.speed == nil && fix.course == nil && fix.climb == nil)
        #expect(fix.timestamp == received)
    }

    @Test func accuracyFallsBackFromEphToAxesToDOP() throws {
        #expect(GPSDFix.horizontalAccuracy(report(eph: 12)) == 12)
        #expect(GPSDFix.horizontalAccuracy(report(epx: 3, epy: 4)) == 5)
        #expect(abs(GPSDFix.horizontalAccuracy(report(hdop: 1.5)) - 1.5 * 4 * 1.73) < 1e-9)
        #expect(GPSDFix.horizontalAccuracy(report()) > 0)
        #expect(GPSDFix.horizontalAccuracy(report(eph: 0, hdop: 0)) > 0)
    }

    @Test(arguments: [Int32(0), 1]) func noFixModesGiveNothing(mode: Int32) {
        #expect(GPSDFix.fix(from: report(mode: mode, eph: 5), receivedAt: received) == nil)
    }

    @Test func nonFiniteOrOutOfRangePositionsGiveNothing() {
        #expect(GPSDFix.fix(from: report(latitude: .nan), receivedAt: received) == nil)
        #expect(GPSDFix.fix(from: report(longitude: .infinity), receivedAt: received) == nil)
        #expect(GPSDFix.fix(from: report(latitude: 91), receivedAt: received) == nil)
        #expect(GPSDFix.fix(from: report(longitude: -181), receivedAt: received) == nil)
    }

    @Test func a2DFixHasNoAltitude() throws {
        var raw = report(mode: 2, eph: 5)
        raw.altitude_msl = .nan
        let fix = try #require(GPSDFix.fix(from: raw, receivedAt: received))
        #expect(fix.altitude == nil && fix.description == "gpsd 2D fix")
    }
}
