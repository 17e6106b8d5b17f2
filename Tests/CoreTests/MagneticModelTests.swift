import Foundation
import Testing
import WhereaboutsCore

/// The text of the repository's `data/WMM2025.COF`, found from this file's place in `Tests/CoreTests/`.
private func officialCoefficientText() throws -> String {
    let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    return try String(contentsOf: repository.appendingPathComponent("data/WMM2025.COF"), encoding: .utf8)
}

/// WMM2025, parsed from the repository's coefficient file.
private func officialModel() throws -> MagneticModel {
    try MagneticModel.parse(cofText: officialCoefficientText(), file: "WMM2025.COF")
}

/// The error that parsing `text` throws, or nil when it parses.
private func parseError(_ text: String) -> MagneticModelError? {
    do {
        _ = try MagneticModel.parse(cofText: text, file: "WMM.COF")
        return nil
    } catch {
        return error
    }
}

/// The error that evaluating `model` throws, or nil when it gives a field.
private func fieldError(
    _ model: MagneticModel, latitude: Double = 0, longitude: Double = 0, height: Double = 0, year: Double = 2026
) -> MagneticFieldError? {
    do {
        _ = try model.field(latitude: latitude, longitude: longitude, heightAboveEllipsoid: height, decimalYear: year)
        return nil
    } catch {
        return error
    }
}

/// One row of the WMM2025 technical report's table of test values (and the `README.txt` of NOAA's `WMM2025COF.zip`),
/// its values rounded as published: nanotesla to 0.1, degrees to 0.01.
private struct ReportRow: Sendable {
    var year: Double
    var heightKilometres: Double
    var latitude: Double
    var longitude: Double
    var north: Double
    var east: Double
    var down: Double
    var horizontal: Double
    var total: Double
    var inclination: Double
    var declination: Double
}

/// The report's 12 test values: 2025.0 and 2027.5, heights 0 and 100 km, at 80° N, the equator and 80° S.
private let reportRows: [ReportRow] = [
    .init(2025.0, 0, 80, 0, 6521.6, 145.9, 54791.5, 6523.2, 55178.5, 83.21, 1.28),
    .init(2025.0, 0, 0, 120, 39677.8, -109.6, -10580.2, 39677.9, 41064.3, -14.93, -0.16),
    .init(2025.0, 0, -80, 240, 6117.5, 15751.9, -52022.5, 16898.1, 54698.2, -72.00, 68.78),
    .init(2025.0, 100, 80, 0, 6216.0, 92.4, 52598.8, 6216.7, 52964.9, 83.26, 0.85),
    .init(2025.0, 100, 0, 120, 37688.6, -96.2, -10152.1, 37688.7, 39032.1, -15.08, -0.15),
    .init(2025.0, 100, -80, 240, 5907.6, 14780.3, -49540.7, 15917.1, 52035.0, -72.19, 68.21),
    .init(2027.5, 0, 80, 0, 6500.8, 294.5, 54869.4, 6507.5, 55253.9, 83.24, 2.59),
    .init(2027.5, 0, 0, 120, 39701.6, -167.4, -10381.8, 39702.0, 41036.9, -14.65, -0.24),
    .init(2027.5, 0, -80, 240, 6200.7, 15730.3, -51783.7, 16908.3, 54474.2, -71.92, 68.49),
    .init(2027.5, 100, 80, 0, 6196.7, 233.8, 52670.5, 6201.1, 53034.3, 83.29, 2.16),
    .init(2027.5, 100, 0, 120, 37711.5, -148.7, -9969.8, 37711.8, 39007.4, -14.81, -0.23),
    .init(2027.5, 100, -80, 240, 5984.0, 14760.1, -49317.7, 15927.0, 51825.7, -72.10, 67.93),
]

extension ReportRow {
    /// A row from the report's columns, in its order: date, height, latitude, longitude, X, Y, Z, H, F, I, D.
    init(
        _ year: Double, _ heightKilometres: Double, _ latitude: Double, _ longitude: Double, _ north: Double,
        _ east: Double, _ down: Double, _ horizontal: Double, _ total: Double, _ inclination: Double,
        _ declination: Double
    ) {
        self.init(
            year: year, heightKilometres: heightKilometres, latitude: latitude, longitude: longitude, north: north,
            east: east, down: down, horizontal: horizontal, total: total, inclination: inclination,
            declination: declination)
    }
}

@Suite struct MagneticModelTests {
    @Test func readsTheHeader() throws {
        let model = try officialModel()
        #expect(model.name == "WMM-2025")
        #expect(model.epoch == 2025)
        #expect(model.validity == 2025.0..<2030.0)
    }

    /// The daemon's built-in model is the repository's file, byte for byte, and reads as it does.
    @Test func theBuiltInModelIsTheFile() throws {
        #expect(Array(MagneticModel.embeddedWMM2025.utf8) == Array(try officialCoefficientText().utf8))
        let builtIn = MagneticModel.wmm2025()
        #expect(builtIn.name == "WMM-2025" && builtIn.validity == 2025.0..<2030.0)
        let at = WallTime(microseconds: 1_767_225_600_000_000)
        let official = try officialModel().field(latitude: 52, longitude: 13, heightAboveEllipsoid: 0, at: at)
        #expect(try builtIn.field(latitude: 52, longitude: 13, heightAboveEllipsoid: 0, at: at) == official)
    }

    @Test(arguments: reportRows) fileprivate func reportTable(_ row: ReportRow) throws {
        let field = try officialModel().field(
            latitude: row.latitude, longitude: row.longitude, heightAboveEllipsoid: row.heightKilometres * 1_000,
            decimalYear: row.year)
        #expect(abs(field.declination - row.declination) <= 0.01)
        #expect(abs(field.inclination - row.inclination) <= 0.01)
        // Published to 0.1 nT: half of that for the rounding, and a little for arithmetic.
        #expect(abs(field.north - row.north) <= 0.06)
        #expect(abs(field.east - row.east) <= 0.06)
        #expect(abs(field.down - row.down) <= 0.06)
        #expect(abs(field.horizontalIntensity - row.horizontal) <= 0.06)
        #expect(abs(field.totalIntensity - row.total) <= 0.06)
    }

    @Test func publishedTestPoints() throws {
        let model = try officialModel()
        #expect(wmm2025TestPoints.count == 100)
        for point in wmm2025TestPoints {
            let field = try model.field(
                latitude: point.latitude, longitude: point.longitude,
                heightAboveEllipsoid: point.heightKilometres * 1_000, decimalYear: point.decimalYear)
            let place = "\(point.decimalYear) \(point.heightKilometres) km \(point.latitude) \(point.longitude)"
            #expect(abs(field.declination - point.declination) <= 0.01, "declination at \(place)")
            #expect(abs(field.inclination - point.inclination) <= 0.01, "inclination at \(place)")
            // The components are published to a millionth of a nanotesla.
            #expect(abs(field.north - point.north) <= 0.001, "X at \(place)")
            #expect(abs(field.east - point.east) <= 0.001, "Y at \(place)")
            #expect(abs(field.down - point.down) <= 0.001, "Z at \(place)")
        }
    }

    @Test func declinationMovesWithTheYears() throws {
        // The report's 80° N, 0° E: 1.28° at 2025.0, 2.59° at 2027.5, from the secular variation alone.
        let model = try officialModel()
        let early = try model.field(latitude: 80, longitude: 0, heightAboveEllipsoid: 0, decimalYear: 2025)
        let later = try model.field(latitude: 80, longitude: 0, heightAboveEllipsoid: 0, decimalYear: 2027.5)
        #expect(abs(later.declination - early.declination - 1.31) <= 0.02)
    }

    @Test(arguments: [90.0, -90.0]) func polesGiveFiniteFields(_ latitude: Double) throws {
        let model = try officialModel()
        for longitude in stride(from: -180.0, through: 180, by: 45) {
            let pole = try model.field(
                latitude: latitude, longitude: longitude, heightAboveEllipsoid: 0, decimalYear: 2026.5)
            #expect(pole.north.isFinite && pole.east.isFinite && pole.down.isFinite)
            #expect(pole.declination.isFinite && pole.inclination.isFinite)
            // The field a hair from the pole, along the same meridian, is nearly the same.
            let near = try model.field(
                latitude: latitude > 0 ? latitude - 1e-7 : latitude + 1e-7, longitude: longitude,
                heightAboveEllipsoid: 0,
                decimalYear: 2026.5)
            #expect(abs(near.declination - pole.declination) <= 1e-3)
            #expect(abs(near.east - pole.east) <= 0.01 && abs(near.north - pole.north) <= 0.01)
        }
    }

    @Test func horizontalIntensityGradesTheCompass() throws {
        let model = try officialModel()
        // Published: H 1504 nT at 89° N, 121° W in 2025.0; 2302 nT at 82° N, 87° E; 24301 nT at 43° N, 93° E.
        let blackout = try model.field(latitude: 89, longitude: -121, heightAboveEllipsoid: 28_000, decimalYear: 2025)
        let caution = try model.field(latitude: 82, longitude: 87, heightAboveEllipsoid: 54_000, decimalYear: 2025)
        let normal = try model.field(latitude: 43, longitude: 93, heightAboveEllipsoid: 65_000, decimalYear: 2025)
        #expect(blackout.compassZone == .blackout)
        #expect(caution.compassZone == .caution)
        #expect(normal.compassZone == .normal)
        #expect(MagneticField(north: 1_999, east: 0, down: 50_000).compassZone == .blackout)
        #expect(MagneticField(north: 0, east: 2_000, down: 50_000).compassZone == .caution)
        #expect(MagneticField(north: 6_000, east: 0, down: 50_000).compassZone == .normal)
    }

    @Test func datesOutsideTheValidityAreRefused() throws {
        let model = try officialModel()
        let validity = 2025.0..<2030.0
        for year in [2024.999, 2030.0, 2031, -.infinity, .nan] {
            let error = fieldError(model, year: year)
            guard case .outsideValidity(let reported, "WMM-2025", validity)? = error else {
                Issue.record("\(year): \(String(describing: error))")
                continue
            }
            #expect(reported.isNaN ? year.isNaN : reported == year)
        }
        #expect(fieldError(model, year: 2025.0) == nil)
        #expect(fieldError(model, year: 2029.999) == nil)
        // 2030-01-01T00:00:00Z is past the end; a second before is inside.
        #expect(throws: MagneticFieldError.outsideValidity(decimalYear: 2030, model: "WMM-2025", validity: validity)) {
            _ = try model.field(
                latitude: 0, longitude: 0, heightAboveEllipsoid: 0, at: WallTime(seconds: 1_893_456_000))
        }
        let lastSecond = try model.field(
            latitude: 0, longitude: 0, heightAboveEllipsoid: 0, at: WallTime(seconds: 1_893_455_999))
        #expect(lastSecond.declination.isFinite)
    }

    @Test func positionsOutOfRangeAreRefused() throws {
        let model = try officialModel()
        #expect(fieldError(model, latitude: 90.000_001) == .latitudeOutOfRange(90.000_001))
        #expect(fieldError(model, latitude: -91) == .latitudeOutOfRange(-91))
        #expect(fieldError(model, longitude: .infinity) == .longitudeNotFinite(.infinity))
        #expect(fieldError(model, height: 850_001) == .heightOutOfRange(850_001))
        #expect(fieldError(model, height: -1_001) == .heightOutOfRange(-1_001))
        #expect(fieldError(model, longitude: 540, height: 850_000) == nil)
        let wrapped = try model.field(latitude: 10, longitude: -170, heightAboveEllipsoid: 0, decimalYear: 2026)
        let east = try model.field(latitude: 10, longitude: 190, heightAboveEllipsoid: 0, decimalYear: 2026)
        #expect(abs(wrapped.declination - east.declination) <= 1e-9)
    }

    @Test func wallTimeAtAMomentIsItsDecimalYear() throws {
        let model = try officialModel()
        // 2027-07-02T12:00:00Z is 2027.5.
        let moment = WallTime(seconds: 1_814_529_600)
        #expect(moment.decimalYear == 2027.5)
        let atMoment = try model.field(latitude: -80, longitude: 240, heightAboveEllipsoid: 0, at: moment)
        #expect(abs(atMoment.declination - 68.49) <= 0.01)
    }

    // MARK: - Decimal years

    @Test func decimalYears() {
        #expect(WallTime(seconds: 1_735_689_600).decimalYear == 2025.0)  // 2025-01-01T00:00:00Z
        #expect(WallTime(seconds: 1_751_457_600).decimalYear == 2025.5)  // 2025-07-02T12:00:00Z
        #expect(WallTime(seconds: 1_861_876_800).decimalYear == 2028 + 365.5 / 366)  // 2028-12-31T12:00:00Z
        #expect(WallTime(seconds: 1_709_164_800).decimalYear == 2024 + 59.0 / 366)  // 2024-02-29T00:00:00Z
        #expect(WallTime(seconds: 978_220_800).decimalYear == 2000 + 365.0 / 366)  // 2000-12-31, a leap year
        #expect(WallTime(seconds: 4_107_542_400).decimalYear == 2100 + 59.0 / 365)  // 2100-03-01, not leap
        #expect(WallTime(seconds: 0).decimalYear == 1970)
        #expect(WallTime(seconds: -43_200).decimalYear == 1969 + 364.5 / 365)  // 1969-12-31T12:00:00Z
        #expect(WallTime(seconds: 1_893_455_999).decimalYear < 2030)
        #expect(WallTime(seconds: 1_893_456_000).decimalYear == 2030)
        #expect(WallTime(seconds: 1_735_689_601).decimalYear > 2025)
        // The ends of WallTime's range are far outside any model, but give a year, not a crash.
        #expect(WallTime(microseconds: .min).decimalYear.isFinite)
        #expect(WallTime(microseconds: .max).decimalYear.isFinite)
    }

    // MARK: - Parsing

    @Test func crlfBlankLinesAndAnyOrderGiveTheSameModel() throws {
        let text = try officialCoefficientText()
        let lines = text.split(separator: "\n").map(String.init)
        let reordered = [lines[0], ""] + lines[1...90].reversed() + ["", lines[91]]
        let crlf = reordered.map { $0 + "\r\n" }.joined()
        let official = try officialModel()
        let model = try MagneticModel.parse(cofText: crlf, file: "WMM.COF")
        #expect(model.name == official.name && model.epoch == official.epoch)
        let expected = try official.field(latitude: 51, longitude: -1, heightAboveEllipsoid: 0, decimalYear: 2026)
        #expect(try model.field(latitude: 51, longitude: -1, heightAboveEllipsoid: 0, decimalYear: 2026) == expected)
    }

    @Test func emptyTextIsRefused() {
        #expect(parseError("") == MagneticModelError(file: "WMM.COF", line: 1, problem: .empty))
        #expect(parseError("\n  \n\r\n") == MagneticModelError(file: "WMM.COF", line: 1, problem: .empty))
    }

    @Test func wrongHeaderIsRefused() throws {
        let lines = try officialCoefficientText().split(separator: "\n").map(String.init)
        let withoutHeader = lines.dropFirst().joined(separator: "\n")
        #expect(
            parseError(withoutHeader)
                == MagneticModelError(file: "WMM.COF", line: 1, problem: .notAHeader("1 0 -29351.8 0.0 12.0 0.0")))
        let noEpoch = (["WMM-2025 11/13/2024"] + lines.dropFirst()).joined(separator: "\n")
        #expect(parseError(noEpoch)?.problem == .notAHeader("WMM-2025 11/13/2024"))
        let noName = (["    2025.0"] + lines.dropFirst()).joined(separator: "\n")
        #expect(parseError(noName)?.problem == .notAHeader("2025.0"))
    }

    @Test func truncatedFilesAreRefused() throws {
        let text = try officialCoefficientText()
        let lines = text.split(separator: "\n").map(String.init)
        // The header and 49 coefficient lines: degrees 1 to 8 (44 lines) and degree 9's orders 0 to 4.
        let cut = lines.prefix(50).joined(separator: "\n") + "\n"
        #expect(
            parseError(cut)
                == MagneticModelError(
                    file: "WMM.COF", line: 50, problem: .missingCoefficients(degree: 9, order: 5, count: 41)))
        // Every coefficient, but not the 9s.
        let noEnd = lines.prefix(91).joined(separator: "\n") + "\n"
        #expect(parseError(noEnd) == MagneticModelError(file: "WMM.COF", line: 91, problem: .missingEndMarker))
        // Cut inside the last coefficient line: "12 12 -0.7 0.2 -0.1 -0." would read as -0.0.
        let inLastLine = String(lines.prefix(91).joined(separator: "\n").dropLast())
        #expect(parseError(inLastLine)?.problem == .missingEndMarker)
        let beforeLastField = String(lines.prefix(91).joined(separator: "\n").dropLast(5))
        #expect(parseError(beforeLastField)?.problem == .wrongFieldCount(found: 5, line: "12 12 -0.7 0.2 -0.1"))
    }

    @Test func badNumbersAreRefused() throws {
        let text = try officialCoefficientText()
        func replacing(_ old: String, with new: String) -> String {
            text.replacingOccurrences(of: old, with: new)
        }
        #expect(
            parseError(replacing("-29351.8", with: "-29351.8x"))
                == MagneticModelError(file: "WMM.COF", line: 2, problem: .notANumber(.g, "-29351.8x")))
        #expect(
            parseError(replacing("4545.4", with: "nan"))
                == MagneticModelError(file: "WMM.COF", line: 3, problem: .notANumber(.h, "nan")))
        #expect(parseError(replacing("  -21.5\n", with: "  inf\n"))?.problem == .notANumber(.hRate, "inf"))
        #expect(
            parseError(replacing("  1  0  -29351.8", with: "  1.0  0  -29351.8"))?.problem
                == .notANumber(.degree, "1.0"))
        #expect(
            parseError(replacing("  1  1   -1410.8", with: "  1  x   -1410.8"))?.problem == .notANumber(.order, "x"))
    }

    @Test func wrongDegreesAreRefused() throws {
        let text = try officialCoefficientText()
        var lines = text.split(separator: "\n").map(String.init)
        lines.insert(" 13  0       0.1       0.0        0.0        0.0", at: 91)
        #expect(
            parseError(lines.joined(separator: "\n"))
                == MagneticModelError(file: "WMM.COF", line: 92, problem: .degreeOutOfRange(degree: 13, order: 0)))
        let orderPastDegree = text.replacingOccurrences(of: "  2  2    1649.3", with: "  2  3    1649.3")
        #expect(parseError(orderPastDegree)?.problem == .degreeOutOfRange(degree: 2, order: 3))
        let degreeZero = text.replacingOccurrences(of: "  1  0  -29351.8", with: "  0  0  -29351.8")
        #expect(parseError(degreeZero)?.problem == .degreeOutOfRange(degree: 0, order: 0))
        let twice = text.replacingOccurrences(of: "  2  2    1649.3", with: "  2  1    1649.3")
        #expect(
            parseError(twice) == MagneticModelError(file: "WMM.COF", line: 6, problem: .duplicate(degree: 2, order: 1)))
    }

    @Test func errorsNameFileAndLine() {
        let error = MagneticModelError(file: "/usr/share/whereabouts/WMM2025.COF", line: 7, problem: .missingEndMarker)
        #expect(
            error.description
                == "/usr/share/whereabouts/WMM2025.COF:7: the line of 9s that ends the coefficients is missing; "
                + "the file may have been cut short")
    }
}
