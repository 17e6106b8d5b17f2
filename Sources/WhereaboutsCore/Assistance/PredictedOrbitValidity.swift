/// How long a downloaded predicted-orbit file (XTRA) is used: "the file says how long; without a date, 7 days,
/// never longer than 14".
///
/// An XTRA file carries no plain date (its validity is inside Qualcomm's binary format), so its date is the one the
/// HTTP answer gives it: `Cache-Control: max-age=N` less the answer's `Age` (the time it spent in caches on the
/// way) first, else `Expires` counted from the answer's `Date` (so a server's clock that differs from the
/// machine's does not matter; without a `Date`, from the download), an `Expires` that is not a date meaning
/// already expired; else ``defaultValidity``. The result is never more than ``maximumValidity`` from the download,
/// nor less than ``minimumValidity``, so that a server calling its file stale at once (`max-age=0`) is not asked
/// again at every start of a receiver.
public enum PredictedOrbitValidity {
    /// How long a file is used when the answer gives no date.
    public static let defaultValidity = Duration.seconds(7 * 86_400)
    /// The longest a file is used, whatever the answer says.
    public static let maximumValidity = Duration.seconds(14 * 86_400)
    /// The shortest time a file is used, whatever the answer says.
    public static let minimumValidity = Duration.seconds(3600)

    /// When a file downloaded at `downloaded`, answered with `headers`, stops being used.
    public static func expiry(downloaded: WallTime, headers: [HTTPHeader]) -> WallTime {
        let validity = announcedValidity(headers, downloaded: downloaded) ?? defaultValidity
        return downloaded.advanced(by: min(max(validity, minimumValidity), maximumValidity))
    }

    /// The validity the headers announce, nil when they announce none; `downloaded` stands in for a missing `Date`.
    static func announcedValidity(_ headers: [HTTPHeader], downloaded: WallTime) -> Duration? {
        if let maximumAge = maximumAge(headers) { return maximumAge - (age(headers) ?? .zero) }
        guard let expires = value("Expires", in: headers) else { return nil }
        guard let expiry = HTTPDate.parse(expires) else { return .zero }
        return expiry.since(value("Date", in: headers).flatMap(HTTPDate.parse) ?? downloaded)
    }

    /// `Age` in seconds, nil without one or with one that is not a number.
    static func age(_ headers: [HTTPHeader]) -> Duration? {
        guard let text = value("Age", in: headers)?[...].trimmed, !text.isEmpty,
            text.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return Int64(text).map { .seconds($0) } ?? maximumValidity
    }

    /// `Cache-Control`'s `max-age` in seconds, nil without one (or with one that is not a number).
    static func maximumAge(_ headers: [HTTPHeader]) -> Duration? {
        for header in headers where header.name.lowercased() == "cache-control" {
            for directive in header.value.split(separator: ",") {
                let parts = directive.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmed.lowercased() == "max-age" else { continue }
                var number = parts[1].trimmed
                if number.hasPrefix("\""), number.hasSuffix("\""), number.count >= 2 {
                    number = String(number.dropFirst().dropLast())
                }
                guard !number.isEmpty, number.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
                // A number longer than Int64 is more than the maximum anyway.
                return Int64(number).map { .seconds($0) } ?? maximumValidity
            }
        }
        return nil
    }

    /// The value of the first header called `name` (without regard to case).
    private static func value(_ name: String, in headers: [HTTPHeader]) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

extension Substring {
    /// Without spaces and tabs at either end.
    fileprivate var trimmed: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
