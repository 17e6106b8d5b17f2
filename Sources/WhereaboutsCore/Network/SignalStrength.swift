/// Conversions between a Wi-Fi signal level in dBm and NetworkManager's signal quality percentage.
///
/// NetworkManager reports an access point's `Strength` as a percentage made from the driver's dBm level by
/// `nm_wifi_utils_level_to_quality`: the level is clamped to −100…−40 dBm and mapped linearly, with truncation,
/// onto 0…100 %:
///
///     quality = 100 − ⌊100 · |clamp(dBm, −100, −40) + 40| / 60⌋
///
/// ``dBm(fromQuality:)`` inverts it as `dBm = −40 − 0.6 · (100 − quality)`, rounded to the nearest whole dBm, with
/// the quality clamped to 0…100 first, so the answer is always within −100…−40 dBm. For every whole level in that
/// range the inversion gives back the level NetworkManager started from; levels outside it come back clamped.
public enum SignalStrength {
    /// The weakest level NetworkManager distinguishes: 0 %.
    public static let weakestDBm = -100
    /// The strongest level NetworkManager distinguishes: 100 %.
    public static let strongestDBm = -40

    /// NetworkManager's quality percentage for a level of `dBm` (its `nm_wifi_utils_level_to_quality` for a
    /// negative level).
    public static func quality(fromDBm dBm: Int) -> Int {
        let clamped = min(max(dBm, weakestDBm), strongestDBm)
        let below = -(clamped - strongestDBm)  // 0…60
        return 100 - (100 * below) / 60
    }

    /// The level in dBm that NetworkManager's `quality` percentage stands for: −40 − 0.6 · (100 − quality),
    /// rounded; a percentage outside 0…100 is clamped first.
    public static func dBm(fromQuality quality: Int) -> Int {
        let missing = 100 - min(max(quality, 0), 100)  // 0…100
        // 0.6 · missing rounded half up; 6 · missing is even, so no value falls exactly halfway.
        return strongestDBm - (6 * missing + 5) / 10
    }
}
