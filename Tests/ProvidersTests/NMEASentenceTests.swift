import TestBasics
import Testing
import WhereaboutsProviders

/// A sentence with its checksum: `$`, the body, `*` and the XOR of the body's bytes.
func nmea(_ body: String) -> String {
    let checksum = body.utf8.reduce(0 as UInt8, ^)
    let digits = String(checksum, radix: 16, uppercase: true)
    return "$\(body)*\(digits.count == 1 ? "0" + digits : digits)"
}

/// A deterministic random number generator (SplitMix64), so failures reproduce.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Decodes a line and returns its GGA content, failing the test otherwise.
private func decodeGGA(_ line: String) throws -> NMEASentence.GGA {
    guard case .gga(let gga) = try NMEASentence(parsing: line).content else {
        Issue.record("not a GGA: \(line)")
        throw NMEAError.empty
    }
    return gga
}

/// The error that decoding `line` throws, or nil if it decodes.
private func decodingError(_ line: String) -> NMEAError? {
    do {
        _ = try NMEASentence(parsing: line)
        return nil
    } catch {
        return error
    }
}

@Suite("NMEA sentence framing")
struct NMEAFramingTests {
    static let gga = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"
    static let rmc = "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A"

    @Test func acceptsPublishedExamplesWithTheirChecksums() throws {
        let gga = try NMEASentence(parsing: Self.gga)
        #expect(gga.talker == "GP")
        #expect(gga.type == "GGA")
        let rmc = try NMEASentence(parsing: Self.rmc)
        #expect(rmc.type == "RMC")
        #expect(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,") == Self.gga)
    }

    @Test func acceptsLineTerminatorsAndLowercaseHex() throws {
        _ = try NMEASentence(parsing: Self.gga + "\r\n")
        _ = try NMEASentence(parsing: Self.gga + "\n")
        _ = try NMEASentence(parsing: Self.gga + "\r")
        _ = try NMEASentence(parsing: Self.rmc.replacingLast("6A", with: "6a"))
        _ = try NMEASentence(parsing: Array(Self.gga.utf8))
    }

    @Test func rejectsAWrongChecksum() {
        #expect(
            decodingError(Self.gga.replacingLast("47", with: "48")) == .checksumMismatch(stated: 0x48, computed: 0x47))
        let corrupted = Self.gga.replacingLast("545.4", with: "545.5")
        #expect(decodingError(corrupted) == .checksumMismatch(stated: 0x47, computed: 0x46))
    }

    @Test func rejectsMissingOrMalformedChecksums() {
        #expect(decodingError("$GPGGA,123519,4807.038,N") == .missingChecksum)
        #expect(decodingError("$GPGGA,123519*4") == .malformedChecksum("4"))
        #expect(decodingError("$GPGGA,123519*471") == .malformedChecksum("471"))
        #expect(decodingError("$GPGGA,123519*G1") == .malformedChecksum("G1"))
        #expect(decodingError("$GPGGA,123519*") == .malformedChecksum(""))
        #expect(decodingError("$GPGGA*12*34") == .malformedChecksum("12*34"))
    }

    @Test func rejectsBadFraming() {
        #expect(decodingError("") == .empty)
        #expect(decodingError("\r\n") == .empty)
        #expect(decodingError("GPGGA,123519*47") == .missingStartDelimiter)
        #expect(decodingError(" " + Self.gga) == .missingStartDelimiter)
        #expect(decodingError("!AIVDM,1,1,,A,13aEOK?P00PD2wVMdLDRhgvL289?,0*26") == .missingStartDelimiter)
        #expect(decodingError("$GPGGA,1\u{0}3519*47") == .invalidCharacter(byte: 0, offset: 8))
        #expect(decodingError("$GPGGA,\u{7F}*47") == .invalidCharacter(byte: 0x7F, offset: 7))
        #expect(decodingError("$GPGGA,é*47") == .invalidCharacter(byte: 0xC3, offset: 7))
        #expect(decodingError("$GPGGA,123$GPRMC*47") == .invalidCharacter(byte: UInt8(ascii: "$"), offset: 10))
        #expect(decodingError("$GPGGA,1\r\n23*47") == .invalidCharacter(byte: 0x0D, offset: 8))
    }

    @Test func enforcesTheLengthLimit() throws {
        let limit = NMEASentence.maximumLength
        let padding = String(repeating: "0", count: limit - 10)
        let longest = nmea("GPXXX,\(padding)")
        #expect(longest.utf8.count == limit)
        _ = try NMEASentence(parsing: longest)
        _ = try NMEASentence(parsing: longest + "\r\n")
        let tooLong = nmea("GPXXX,\(padding)0")
        #expect(decodingError(tooLong) == .tooLong(length: limit + 1, limit: limit))
        let huge = String(repeating: "$GPGGA,", count: 200_000)
        #expect(decodingError(huge) == .tooLong(length: huge.utf8.count, limit: limit))
    }

    @Test func checksAddresses() throws {
        #expect(decodingError(nmea("gpgga,1")) == .malformedAddress("gpgga"))
        #expect(decodingError(nmea("GPGG,1")) == .malformedAddress("GPGG"))
        #expect(decodingError(nmea("GPGGAA,1")) == .malformedAddress("GPGGAA"))
        #expect(decodingError(nmea(",1")) == .malformedAddress(""))
        let proprietary = try NMEASentence(parsing: nmea("PUBX,00,123519.00,4807.038,N"))
        #expect(proprietary.talker == "P")
        #expect(proprietary.type == "UBX")
        #expect(proprietary.content == .unsupported)
    }

    @Test(arguments: ["GP", "GN", "GL", "GA", "BD", "GB", "GQ", "QZ", "GI"])
    func acceptsAnyTalker(talker: String) throws {
        let sentence = try NMEASentence(
            parsing: nmea("\(talker)GGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
        #expect(sentence.talker == talker)
        guard case .gga = sentence.content else {
            Issue.record("not decoded as GGA")
            return
        }
    }

    @Test func ignoresUnknownSentenceTypes() throws {
        let txt = try NMEASentence(parsing: nmea("GPTXT,01,01,02,ANTSTATUS=OK"))
        #expect(txt.content == .unsupported)
    }

    @Test func neverCrashesOnRandomBytes() {
        var random = SeededGenerator(state: 1)
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...150, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = try? NMEASentence(parsing: bytes)
        }
    }

    @Test func neverCrashesOnMutatedSentences() {
        var random = SeededGenerator(state: 2)
        let alphabet = Array("0123456789.,-+NSEWAV*$MKT \u{0}".utf8)
        let samples = [
            Self.gga, Self.rmc, nmea("GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1"),
            nmea("GPGST,123519,1.2,3.0,2.0,45.0,2.1,2.2,3.5"), nmea("GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A"),
        ]
        for _ in 0..<20_000 {
            var bytes = Array(samples.randomElement(using: &random)!.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0...2, using: &random) {
                case 0: bytes[index] = alphabet.randomElement(using: &random)!
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet.randomElement(using: &random)!, at: index)
                }
                if bytes.isEmpty { break }
            }
            // Re-checksum half of them so that field validation, not only the checksum, is exercised.
            if Bool.random(using: &random), let star = bytes.lastIndex(of: UInt8(ascii: "*")),
                bytes.first == UInt8(ascii: "$")
            {
                let body = String(decoding: bytes[1..<star], as: UTF8.self)
                _ = try? NMEASentence(parsing: nmea(body))
            } else {
                _ = try? NMEASentence(parsing: bytes)
            }
        }
    }
}

@Suite("NMEA sentence fields")
struct NMEAFieldTests {
    @Test func decodesGGA() throws {
        let gga = try decodeGGA(NMEAFramingTests.gga)
        #expect(gga.time == NMEATimeOfDay(hour: 12, minute: 35, second: 19))
        #expect(gga.quality == 1)
        #expect(gga.satellitesInUse == 8)
        #expect(gga.hdop == 0.9)
        #expect(gga.altitude == 545.4)
        #expect(gga.geoidSeparation == 46.9)
        let position = try #require(gga.position)
        #expect(abs(position.latitude - (48 + 7.038 / 60)) < 1e-12)
        #expect(abs(position.longitude - (11 + 31.0 / 60)) < 1e-12)
    }

    @Test func decodesSouthWestAndFractionalTime() throws {
        let gga = try decodeGGA(nmea("GNGGA,235959.125,3351.5000,S,15112.7500,W,2,12,0.6,-3.5,M,-21.2,M,1.0,0000"))
        #expect(gga.time?.microsecondsSinceMidnight == 86_399_125_000)
        #expect(gga.position == NMEASentence.Position(latitude: -(33 + 51.5 / 60), longitude: -(151 + 12.75 / 60)))
        #expect(gga.altitude == -3.5)
        #expect(gga.geoidSeparation == -21.2)
        let long = try decodeGGA(nmea("GNGGA,000000.1234567,0000.0000000,N,18000.00000,E,1,12,0.6,,,,,,"))
        #expect(long.time?.microsecondsSinceMidnight == 123_456)
        #expect(long.position == NMEASentence.Position(latitude: 0, longitude: 180))
        #expect(long.altitude == nil)
    }

    @Test func acceptsANoFixGGAWithEmptyFields() throws {
        let gga = try decodeGGA(nmea("GPGGA,,,,,,0,00,99.99,,,,,,"))
        #expect(gga.quality == 0)
        #expect(gga.time == nil)
        #expect(gga.position == nil)
    }

    @Test func requiresPositionAndTimeWhenGGAHasAFix() {
        #expect(
            decodingError(nmea("GPGGA,123519,,,,,1,08,0.9,545.4,M,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "position"))
        #expect(
            decodingError(nmea("GPGGA,,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "time"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "latitude hemisphere"))
        #expect(
            decodingError(nmea("GPGGA,123519,,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "latitude"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,,,1,08,0.9,545.4,M,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "longitude"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,,08,0.9,545.4,M,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "fix quality"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,,46.9,M,,"))
                == .missingField(sentence: "GGA", field: "altitude unit"))
    }

    @Test(arguments: [
        ("9007.038", "latitude"), ("4860.000", "latitude"), ("807.038", "latitude"), ("04807.03", "latitude"),
        ("48-7.038", "latitude"), ("4807.0a8", "latitude"), ("48.07038", "latitude"), ("4807.03.8", "latitude"),
        ("+807.038", "latitude"), ("4807.038e1", "latitude"),
    ])
    func rejectsInvalidLatitudes(value: String, field: String) {
        let line = nmea("GPGGA,123519,\(value),N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        #expect(decodingError(line) == .invalidField(sentence: "GGA", field: field, value: value))
    }

    @Test func acceptsTheLatitudeAndLongitudeLimits() throws {
        let gga = try decodeGGA(nmea("GPGGA,123519,9000.000,S,18000.000,W,1,08,0.9,545.4,M,46.9,M,,"))
        #expect(gga.position == NMEASentence.Position(latitude: -90, longitude: -180))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,18000.001,E,1,08,0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "longitude", value: "18000.001"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,1131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "longitude", value: "1131.000"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "latitude hemisphere", value: "X"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,N,1,08,0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "longitude hemisphere", value: "N"))
    }

    @Test(arguments: ["240000", "126019", "123560", "12351", "1235199", "123519.", "12a519", "123519.5x", "-12351"])
    func rejectsInvalidTimes(value: String) {
        let line = nmea("GPGGA,\(value),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        #expect(decodingError(line) == .invalidField(sentence: "GGA", field: "time", value: value))
    }

    @Test func rejectsOtherInvalidGGAFields() {
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,9,08,0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "fix quality", value: "9"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,-0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "HDOP", value: "-0.9"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,inf,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "altitude", value: "inf"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,F,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "altitude unit", value: "F"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,100,0.9,545.4,M,46.9,M,,"))
                == .invalidField(sentence: "GGA", field: "satellite count", value: "100"))
        #expect(
            decodingError(nmea("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M"))
                == .tooFewFields(sentence: "GGA", count: 12, required: 14))
    }

    @Test func decodesRMC() throws {
        guard case .rmc(let rmc) = try NMEASentence(parsing: NMEAFramingTests.rmc).content else {
            Issue.record("not an RMC")
            return
        }
        #expect(rmc.isValid)
        #expect(rmc.time == NMEATimeOfDay(hour: 12, minute: 35, second: 19))
        #expect(rmc.date == NMEADate(year: 1994, month: 3, day: 23))
        #expect(abs(try #require(rmc.speed) - 22.4 * 1852 / 3600) < 1e-12)
        #expect(rmc.course == 84.4)
        #expect(rmc.position?.latitude ?? 0 > 48)
    }

    @Test func decodesRMCStatusModeAndDates() throws {
        func rmc(_ body: String) throws -> NMEASentence.RMC {
            guard case .rmc(let rmc) = try NMEASentence(parsing: nmea(body)).content else { throw NMEAError.empty }
            return rmc
        }
        #expect(try !rmc("GPRMC,,V,,,,,,,,,,N").isValid)
        #expect(try !rmc("GPRMC,123519,A,4807.038,N,01131.000,E,0.0,,150324,,,N").isValid)
        #expect(try rmc("GPRMC,123519,A,4807.038,N,01131.000,E,0.0,,150324,,,D,V").isValid)
        #expect(try rmc("GPRMC,123519,A,4807.038,N,01131.000,E,0.0,360.0,150324,,").course == 0)
        #expect(
            try rmc("GNRMC,123519,A,4807.038,N,01131.000,E,,,290224,,,A").date
                == NMEADate(year: 2024, month: 2, day: 29))
        #expect(
            try rmc("GNRMC,123519,A,4807.038,N,01131.000,E,,,311299,,,A").date
                == NMEADate(year: 1999, month: 12, day: 31))
        #expect(
            decodingError(nmea("GPRMC,123519,A,4807.038,N,01131.000,E,0.0,,290223,,"))
                == .invalidField(sentence: "RMC", field: "date", value: "290223"))
        #expect(
            decodingError(nmea("GPRMC,123519,A,4807.038,N,01131.000,E,0.0,,001323,,"))
                == .invalidField(sentence: "RMC", field: "date", value: "001323"))
        #expect(
            decodingError(nmea("GPRMC,123519,X,4807.038,N,01131.000,E,0.0,,150324,,"))
                == .invalidField(sentence: "RMC", field: "status", value: "X"))
        #expect(
            decodingError(nmea("GPRMC,123519,A,4807.038,N,01131.000,E,-1.0,,150324,,"))
                == .invalidField(sentence: "RMC", field: "speed", value: "-1.0"))
        #expect(
            decodingError(nmea("GPRMC,123519,A,4807.038,N,01131.000,E,1.0,360.5,150324,,"))
                == .invalidField(sentence: "RMC", field: "course", value: "360.5"))
        #expect(
            decodingError(nmea("GPRMC,123519,A,,,,,1.0,,150324,,"))
                == .missingField(sentence: "RMC", field: "position"))
        #expect(
            decodingError(nmea("GPRMC,123519,A,4807.038,N,01131.000,E,0.0,,150324,,,Q"))
                == .invalidField(sentence: "RMC", field: "mode indicator", value: "Q"))
    }

    @Test func decodesGSA() throws {
        func gsa(_ body: String) throws -> NMEASentence.GSA {
            guard case .gsa(let gsa) = try NMEASentence(parsing: nmea(body)).content else { throw NMEAError.empty }
            return gsa
        }
        let fix = try gsa("GNGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1,1")
        #expect(fix.fixMode == 3)
        #expect(fix.pdop == 2.5)
        #expect(fix.hdop == 1.3)
        #expect(fix.vdop == 2.1)
        let noFix = try gsa("GPGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99")
        #expect(noFix.fixMode == 1)
        #expect(noFix.hdop == 99.99)
        let empty = try gsa("GPGSA,M,2,,,,,,,,,,,,,,,")
        #expect(empty.fixMode == 2)
        #expect(empty.pdop == nil && empty.hdop == nil && empty.vdop == nil)
        #expect(
            decodingError(nmea("GPGSA,A,4,,,,,,,,,,,,,1,1,1"))
                == .invalidField(sentence: "GSA", field: "fix mode", value: "4"))
        #expect(
            decodingError(nmea("GPGSA,X,3,,,,,,,,,,,,,1,1,1"))
                == .invalidField(sentence: "GSA", field: "selection mode", value: "X"))
        #expect(decodingError(nmea("GPGSA,A,3,04,05")) == .tooFewFields(sentence: "GSA", count: 4, required: 17))
    }

    @Test func decodesGST() throws {
        guard
            case .gst(let gst) = try NMEASentence(parsing: nmea("GPGST,123519.00,1.2,3.0,2.0,45.0,2.1,2.2,3.5")).content
        else {
            Issue.record("not a GST")
            return
        }
        #expect(gst.time == NMEATimeOfDay(hour: 12, minute: 35, second: 19))
        #expect(gst.rangeResidualRMS == 1.2)
        #expect(gst.sigmaLatitude == 2.1)
        #expect(gst.sigmaLongitude == 2.2)
        #expect(gst.sigmaAltitude == 3.5)
        #expect(
            decodingError(nmea("GPGST,123519.00,1.2,3.0,2.0,45.0,-2.1,2.2,3.5"))
                == .invalidField(sentence: "GST", field: "latitude error", value: "-2.1"))
    }

    @Test func decodesVTG() throws {
        let knots = try NMEASentence(parsing: nmea("GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A"))
        guard case .vtg(let vtg) = knots.content else {
            Issue.record("not a VTG")
            return
        }
        #expect(vtg.isValid)
        #expect(vtg.course == 54.7)
        #expect(abs(try #require(vtg.speed) - 5.5 * 1852 / 3600) < 1e-12)
        guard case .vtg(let kilometres) = try NMEASentence(parsing: nmea("GPVTG,,T,,M,,N,036.0,K")).content,
            case .vtg(let invalid) = try NMEASentence(parsing: nmea("GPVTG,,T,,M,,N,,K,N")).content
        else {
            Issue.record("not a VTG")
            return
        }
        #expect(kilometres.isValid && kilometres.course == nil && kilometres.speed == 10)
        #expect(!invalid.isValid && invalid.speed == nil)
    }

    @Test func describesErrorsClearly() {
        #expect(
            NMEAError.checksumMismatch(stated: 0x48, computed: 0x0A).description
                == "checksum mismatch: line says 48, content gives 0A")
        #expect(
            NMEAError.invalidField(sentence: "GGA", field: "latitude", value: "9007.0").description
                == "GGA sentence has invalid latitude '9007.0'")
        #expect(NMEAError.invalidCharacter(byte: 0, offset: 3).description == "invalid character 0x00 at offset 3")
    }
}

extension String {
    /// The string with its last occurrence of `target` replaced.
    fileprivate func replacingLast(_ target: String, with replacement: String) -> String {
        guard let range = self.ranges(of: target).last else { return self }
        var result = self
        result.replaceSubrange(range, with: replacement)
        return result
    }
}
