/// HTTP's date format (RFC 9110's IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`), the one servers send.
public enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    /// The time `text` names, nil unless it is an IMF-fixdate of a real date and time (RFC 9110's obsolete
    /// formats are not read: the answer is then treated as giving no date).
    public static func parse(_ text: String) -> WallTime? {
        let words = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard words.count == 6, words[0].count == 4, words[0].hasSuffix(","),
            weekdays.contains(String(words[0].dropLast())), words[5] == "GMT", words[1].count == 2,
            let day = number(words[1]), let month = months.firstIndex(of: words[2]).map({ $0 + 1 }),
            words[3].count == 4, let year = number(words[3])
        else { return nil }
        let clock = words[4].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = number(clock[0]),
            let minute = number(clock[1]), let second = number(clock[2]), hour < 24, minute < 60, second <= 60,
            day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return WallTime(microseconds: (days * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1_000_000)
    }

    /// The decimal number `digits` holds, nil unless it is ASCII digits only.
    private static func number(_ digits: String) -> Int? {
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(digits)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 (Howard Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        let shiftedYear = Int64(month <= 2 ? year - 1 : year)
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * Int64(month > 2 ? month - 3 : month + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
