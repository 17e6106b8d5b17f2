import WhereaboutsCore

/// A UTC time of day as NMEA sentences carry it (`hhmmss` with an optional fraction).
public struct NMEATimeOfDay: Sendable, Hashable {
    /// Microseconds since midnight UTC, in 0..<86_400_000_000.
    public var microsecondsSinceMidnight: Int64

    /// A time of day from its parts; nil unless hour < 24, minute < 60, second < 60 (leap seconds are not
    /// accepted) and microsecond < 1_000_000.
    public init?(hour: Int, minute: Int, second: Int, microsecond: Int = 0) {
        guard (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second),
            (0..<1_000_000).contains(microsecond)
        else { return nil }
        microsecondsSinceMidnight = Int64((hour * 60 + minute) * 60 + second) * 1_000_000 + Int64(microsecond)
    }
}

/// A UTC calendar date as RMC carries it (`ddmmyy`).
///
/// The two-digit year is read in the window 1980...2079: 80...99 are 1980...1999, 00...79 are 2000...2079.
/// No GNSS date precedes 1980, the start of GPS time.
public struct NMEADate: Sendable, Hashable {
    /// The four-digit year.
    public var year: Int
    /// The month, 1...12.
    public var month: Int
    /// The day of the month, starting at 1.
    public var day: Int

    /// A date from its parts; nil unless it names a real day of the Gregorian calendar.
    public init?(year: Int, month: Int, day: Int) {
        guard CivilCalendar.isValidDate(year: year, month: month, day: day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01.
    public var daysSinceEpoch: Int64 { CivilCalendar.daysSinceEpoch(year: year, month: month, day: day) }

    /// Midnight UTC at the start of this date.
    public var midnight: WallTime { WallTime(microseconds: daysSinceEpoch * CivilCalendar.microsecondsPerDay) }
}
