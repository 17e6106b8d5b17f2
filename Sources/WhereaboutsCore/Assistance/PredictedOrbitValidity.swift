/// How long a downloaded predicted-orbit file (XTRA) is used: "the file says how long; without a date, 7 days,
/// never longer than 14".
///
/// An XTRA file carries no plain date (its validity is inside Qualcomm's binary format), so its date is the one the
/// HTTP answer gives it: `Cache-Control: max-age=N` first, else `Expires` counted from the answer's `Date` (so a
/// server's clock that differs from the machine's does not matter), else ``defaultValidity`` from the download. The
/// result is never more than ``maximumValidity`` from the download, nor before it (`max-age=0`, an `Expires` in
/// the past: the file is injected once, then downloaded again when next needed).
public enum PredictedOrbitValidity {
    /// How long a file is used when the answer gives no date.
    public static let defaultValidity = Duration.seconds(7 * 86_400)
    /// The longest a file is used, whatever the answer says.
    public static let maximumValidity = Duration.seconds(14 * 86_400)

    /// When a file downloaded at `downloaded`, answered with `headers`, stops being used.
    public static func expiry(downloaded: WallTime, headers: [HTTPHeader]) -> WallTime {
        let validity = announcedValidity(headers) ?? defaultValidity
        return downloaded.advanced(by: min(max(validity, .zero), maximumValidity))
    }

    /// The validity the headers announce, nil when they announce none.
    static func announcedValidity(_ headers: [HTTPHeader]) -> Duration? {
        if let maximumAge = maximumAge(headers) { return maximumAge }
        guard let expires = value("Expires", in: headers), let date = value("Date", in: headers),
            let expiry = HTTPDate.parse(expires), let sent = HTTPDate.parse(date)
        else { return nil }
        return expiry.since(sent)
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
