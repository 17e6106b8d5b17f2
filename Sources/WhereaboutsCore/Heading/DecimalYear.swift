extension WallTime {
    /// The moment as a decimal year of the proleptic Gregorian calendar, in UTC, the date the magnetic model takes:
    /// the year plus the fraction of it gone by, which is the time since the year's first midnight over the year's
    /// length (366 days in a leap year, 365 otherwise).
    ///
    /// 2025-01-01T00:00:00Z is 2025.0, 2025-07-02T12:00:00Z is 2025.5 and 2028-12-31T12:00:00Z (a leap year) is
    /// 2028 + 365.5 / 366. Leap seconds are not counted, as Unix time does not count them.
    public var decimalYear: Double {
        let microsecondsPerDay: Int64 = 86_400_000_000
        let day = floorDivision(microseconds, microsecondsPerDay)
        // The microseconds since the day's midnight, found without multiplying back (which can overflow).
        let intoDay = (microseconds % microsecondsPerDay + microsecondsPerDay) % microsecondsPerDay
        let year = gregorianYear(containingDay: day)
        let start = daysFromEpoch(toStartOf: year)
        let length = daysFromEpoch(toStartOf: year + 1) - start
        let daysIntoYear = Double(day - start) + Double(intoDay) / Double(microsecondsPerDay)
        return Double(year) + daysIntoYear / Double(length)
    }
}

/// The days from 1970-01-01 to 1 January of `year` of the proleptic Gregorian calendar; negative before 1970.
private func daysFromEpoch(toStartOf year: Int64) -> Int64 {
    let yearsBefore = year - 1
    let daysToStartFromYearOne =
        365 * yearsBefore + floorDivision(yearsBefore, 4) - floorDivision(yearsBefore, 100)
        + floorDivision(yearsBefore, 400)
    // 719_162 days run from 0001-01-01 to 1970-01-01.
    return daysToStartFromYearOne - 719_162
}

/// The year of the proleptic Gregorian calendar holding the day `day` days after 1970-01-01.
private func gregorianYear(containingDay day: Int64) -> Int64 {
    // An estimate from the mean year of 365.2425 days, off by at most one, then corrected.
    var year = 1970 + floorDivision(day * 400, 146_097)
    while daysFromEpoch(toStartOf: year) > day { year -= 1 }
    while daysFromEpoch(toStartOf: year + 1) <= day { year += 1 }
    return year
}

/// `dividend / divisor` rounded toward minus infinity, for a positive divisor.
private func floorDivision(_ dividend: Int64, _ divisor: Int64) -> Int64 {
    dividend >= 0 ? dividend / divisor : (dividend + 1) / divisor - 1
}
