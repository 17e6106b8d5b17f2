import Foundation
import Testing
import WhereaboutsCore

/// WMM2025 from the repository's `data/WMM2025.COF`, found from this file's place in `Tests/CoreTests/`.
private func wmm2025() throws -> MagneticModel {
    let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    let text = try String(contentsOf: repository.appendingPathComponent("data/WMM2025.COF"), encoding: .utf8)
    return try MagneticModel.parse(cofText: text, file: "WMM2025.COF")
}

/// 2025-01-01T00:00:00Z, the model's epoch.
private let epoch2025 = WallTime(seconds: 1_735_689_600)
/// 2027-07-02T12:00:00Z, 2027.5 (2027 has 365 days).
private let midway2027 = WallTime(seconds: 1_798_761_600 + 182 * 86_400 + 43_200)

/// A fix at a place and date, as a receiver would give it.
private func fix(_ latitude: Double, _ longitude: Double, at time: WallTime, ellipsoidalAltitude: Double? = nil) -> Fix
{
    Fix(
        latitude: latitude, longitude: longitude, horizontalAccuracy: 5, ellipsoidalAltitude: ellipsoidalAltitude,
        course: 123, timestamp: time, provider: .nmea, description: "test")
}

/// A place and date of the WMM2025 report's test values and the declination it publishes there (to 0.01°).
struct DeclinationReference: Sendable, CustomTestStringConvertible {
    var latitude: Double
    var longitude: Double
    var time: WallTime
    var ellipsoidalAltitude: Double?
    var declination: Double
    var testDescription: String { "\(latitude) \(longitude) at \(time.seconds): \(declination)°" }
}

@Suite struct HeadingCorrectionTests {
    /// Three rows of the report's table (Tests/CoreTests/MagneticModelTests.swift): 80° N in 2025.0, the equator at
    /// 120° E in 2027.5, and 80° S at 240° E 100 km up in 2027.5.
    static let references: [DeclinationReference] = [
        .init(latitude: 80, longitude: 0, time: epoch2025, declination: 1.28),
        .init(latitude: 0, longitude: 120, time: midway2027, declination: -0.24),
        .init(latitude: -80, longitude: -120, time: midway2027, ellipsoidalAltitude: 100_000, declination: 67.93),
    ]

    @Test(arguments: references) func trueHeadingIsMagneticPlusTheDeclination(_ reference: DeclinationReference)
        throws
    {
        let correction = HeadingCorrection(model: try wmm2025())
        let place = fix(
            reference.latitude, reference.longitude, at: reference.time,
            ellipsoidalAltitude: reference.ellipsoidalAltitude)
        for magnetic in [0.0, 90, 200, 359.9] {
            let headings = correction.headings(magnetic: magnetic, at: place)
            let trueHeading = try #require(headings.trueHeading)
            var turned = trueHeading - magnetic
            if turned > 180 { turned -= 360 }
            if turned < -180 { turned += 360 }
            // Well within the 0.5° asked for: the published value's rounding and a little arithmetic.
            #expect(abs(turned - reference.declination) <= 0.02, "\(magnetic): \(trueHeading)")
            #expect((0..<360).contains(trueHeading))
            #expect(headings.magnetic == magnetic)
            #expect(headings.accuracy == HeadingCorrection.headingAccuracy)
            #expect(headings.problem == nil)
        }
    }

    @Test func theHeadingWrapsPastNorth() throws {
        let correction = HeadingCorrection(model: try wmm2025())
        // 80° S, 240° E in 2025.0 has a declination of 68.78° east.
        let headings = correction.headings(magnetic: 350, at: fix(-80, 240, at: epoch2025))
        #expect(abs(try #require(headings.trueHeading) - 58.78) <= 0.02)
    }

    @Test func withoutAModelThereIsOnlyTheMagneticHeading() {
        let headings = HeadingCorrection(model: nil).headings(magnetic: 42, at: fix(52, 4, at: epoch2025))
        #expect(headings.magnetic == 42 && headings.trueHeading == nil && headings.problem == nil)
        #expect(headings.accuracy == HeadingCorrection.headingAccuracy)
    }

    @Test func datesOutsideTheModelGiveNoTrueHeadingAndSayWhy() throws {
        let correction = HeadingCorrection(model: try wmm2025())
        let headings = correction.headings(magnetic: 42, at: fix(52, 4, at: WallTime(seconds: 1_893_456_000)))
        #expect(headings.trueHeading == nil)
        #expect(headings.magnetic == 42)
        guard case .outsideValidity(2030, "WMM-2025", _)? = headings.problem else {
            Issue.record("\(String(describing: headings.problem))")
            return
        }
    }

    @Test func theCompassZonesGradeTheAccuracy() throws {
        let correction = HeadingCorrection(model: try wmm2025())
        // The report's zone examples (MagneticModelTests): H 1504 nT and 2302 nT.
        let blackout = correction.headings(
            magnetic: 10, at: fix(89, -121, at: epoch2025, ellipsoidalAltitude: 28_000))
        #expect(blackout.trueHeading == nil && blackout.accuracy == nil && blackout.problem == nil)
        let caution = correction.headings(magnetic: 10, at: fix(82, 87, at: epoch2025, ellipsoidalAltitude: 54_000))
        #expect(caution.trueHeading != nil)
        #expect(caution.accuracy == HeadingCorrection.cautionZoneHeadingAccuracy)
    }

    @Test func readingsThatAreNoHeadingAreRefused() {
        for bad in [Double.nan, .infinity, -.infinity, -1, -0.001, 360.001, 1e9] {
            #expect(HeadingCorrection.heading(fromReading: bad) == nil, "\(bad)")
        }
        #expect(HeadingCorrection.heading(fromReading: 0) == 0)
        #expect(HeadingCorrection.heading(fromReading: 359.5) == 359.5)
        #expect(HeadingCorrection.heading(fromReading: 360) == 0)
    }

    @Test func applyingPutsTheHeadingsOnTheFixAndKeepsTheCourse() throws {
        let correction = HeadingCorrection(model: try wmm2025())
        let (headed, problem) = correction.applying(magnetic: 100, to: fix(80, 0, at: epoch2025))
        #expect(problem == nil)
        #expect(headed.magneticHeading == 100)
        #expect(abs(try #require(headed.trueHeading) - 101.28) <= 0.02)
        #expect(headed.headingAccuracy == HeadingCorrection.headingAccuracy)
        #expect(headed.course == 123)
        let cleared = correction.applying(magnetic: nil, to: headed).fix
        #expect(cleared.magneticHeading == nil && cleared.trueHeading == nil && cleared.headingAccuracy == nil)
        #expect(cleared == fix(80, 0, at: epoch2025))
    }

    @Test(arguments: ProviderKind.allCases) func cellCDMAAndIPFixesCarryNoHeadings(_ kind: ProviderKind)
        throws
    {
        let correction = HeadingCorrection(model: try wmm2025())
        var placed = fix(80, 0, at: epoch2025)
        placed.provider = kind
        let headed = correction.applying(magnetic: 100, to: placed).fix
        let expected: Set<ProviderKind> = [.gpsd, .nmea, .replay, .modemGNSS, .wifi, .static]
        #expect((headed.magneticHeading == 100) == expected.contains(kind), "\(kind)")
        #expect((headed.trueHeading != nil) == expected.contains(kind), "\(kind)")
    }
}
