// Value parsers shared by the NMEA and GPX readers: strict numbers and the proleptic Gregorian calendar.

/// Strict parsers for the numbers of NMEA fields and GPX elements.
enum Lexical {
    /// Parses a plain decimal number: an optional sign, digits with an optional fraction, and nothing else.
    ///
    /// Exponents, spaces, `inf` and `nan` are rejected, as are values too large to be finite; the NMEA and
    /// GPX (`xsd:decimal`) grammars allow none of them.
    static func decimal(_ text: Substring) -> Double? {
        var sawDigit = false
        var sawPoint = false
        for (offset, byte) in text.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                if offset != 0 { return nil }
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                sawDigit = true
            case UInt8(ascii: "."):
                if sawPoint { return nil }
                sawPoint = true
            default:
                return nil
            }
        }
        guard sawDigit, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// Parses a run of one to nine ASCII digits as a non-negative integer.
    static func digits(_ bytes: some Collection<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 9 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The microseconds that a run of fraction digits (the part after the decimal point) stands for.
    ///
    /// Digits beyond the sixth are truncated. Returns nil when the run is empty or holds a non-digit.
    static func fractionMicroseconds(_ bytes: some Collection<UInt8>) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        var scale: Int64 = 100_000
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value += Int64(byte - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        return value
    }
}

/// Dates of the proleptic Gregorian calendar, counted in days from the Unix epoch.
enum CivilCalendar {
    /// Microseconds in one day.
    static let microsecondsPerDay: Int64 = 86_400_000_000

    /// Whether year, month and day name a real date.
    static func isValidDate(year: Int, month: Int, day: Int) -> Bool {
        guard (1...12).contains(month), day >= 1 else { return false }
        let isLeapYear = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        switch month {
        case 2: return day <= (isLeapYear ? 29 : 28)
        case 4, 6, 9, 11: return day <= 30
        default: return day <= 31
        }
    }

    /// Days from 1970-01-01 to a valid date (Howard Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        let shiftedYear = Int64(month <= 2 ? year - 1 : year)
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * Int64(month > 2 ? month - 3 : month + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
