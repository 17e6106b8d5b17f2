/// A Wi-Fi access point's hardware address (BSSID), the 48 bits that an Ichnaea `macAddress` carries.
public struct BSSID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The six octets, the first in the highest bits of the low 48.
    public let value: UInt64

    /// The address made of six octets; nil unless there are exactly six.
    public init?(octets: [UInt8]) {
        guard octets.count == 6 else { return nil }
        value = octets.reduce(0) { ($0 << 8) | UInt64($1) }
    }

    /// The address written as six two-digit hex octets separated by `:` or `-` (either case), as
    /// NetworkManager's `HwAddress` gives it; nil for anything else.
    public init?(text: String) {
        let parts = text.split(separator: text.contains("-") ? "-" : ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard part.utf8.count == 2, let octet = UInt8(part, radix: 16) else { return nil }
            octets.append(octet)
        }
        self.init(octets: octets)
    }

    /// Lower-case hex octets separated by `:`, Ichnaea's canonical `macAddress` form.
    public var description: String {
        (0..<6).map { index in
            let octet = UInt8((value >> UInt64(8 * (5 - index))) & 0xff)
            let digits = String(octet, radix: 16)
            return octet < 16 ? "0" + digits : digits
        }.joined(separator: ":")
    }

    /// The first octet, whose two low bits say multicast (0x01) and locally administered (0x02).
    public var firstOctet: UInt8 { UInt8(value >> 40) }

    public static func < (lhs: BSSID, rhs: BSSID) -> Bool { lhs.value < rhs.value }
}

/// One access point as a scan saw it, from wpa_supplicant's BSS objects or NetworkManager's access points.
public struct AccessPoint: Sendable, Hashable {
    /// Its hardware address.
    public var bssid: BSSID
    /// Its network name, as raw bytes (not necessarily UTF-8); empty for a hidden network.
    public var ssid: [UInt8]
    /// Signal strength in dBm (wpa_supplicant's `Signal`; converted from NetworkManager's percentage).
    public var signal: Int
    /// Channel centre frequency in MHz, when known.
    public var frequency: Int?
    /// Time since the radio last saw it, when known.
    public var age: Duration?

    public init(bssid: BSSID, ssid: [UInt8], signal: Int, frequency: Int? = nil, age: Duration? = nil) {
        self.bssid = bssid
        self.ssid = ssid
        self.signal = signal
        self.frequency = frequency
        self.age = age
    }
}
