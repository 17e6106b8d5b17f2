import TestBasics
import WhereaboutsCore

/// Access points and scans for the network positioning tests.
enum WiFiFixtures {
    /// A universally administered unicast address, `00:1a:2b:` followed by `number` in the low 24 bits.
    static func bssid(_ number: Int) -> BSSID {
        BSSID(octets: [
            0x00, 0x1a, 0x2b, UInt8((number >> 16) & 0xff), UInt8((number >> 8) & 0xff), UInt8(number & 0xff),
        ])!
    }

    /// The access point `number` heard at `signal` dBm, its network named `net<number>` unless told otherwise.
    static func accessPoint(
        _ number: Int, _ signal: Int, ssid: [UInt8]? = nil, frequency: Int? = nil, age: Duration? = nil
    ) -> AccessPoint {
        AccessPoint(
            bssid: bssid(number), ssid: ssid ?? Array("net\(number)".utf8), signal: signal, frequency: frequency,
            age: age)
    }

    /// A scan of the access points numbered by the keys, heard at the values' signals, strongest first.
    static func scan(_ signals: [Int: Int]) -> [AccessPoint] {
        signals.map { accessPoint($0.key, $0.value) }
            .sorted { $0.signal != $1.signal ? $0.signal > $1.signal : $0.bssid < $1.bssid }
    }

    /// The monotonic time `seconds` after zero.
    static func monotonic(_ seconds: Double) -> MonotonicTime {
        MonotonicTime(nanoseconds: Int64((seconds * 1e9).rounded()))
    }

    /// 2023-11-14T22:13:20Z, the wall time the tests start at, moved by `seconds`.
    static func wall(_ seconds: Double = 0) -> WallTime {
        WallTime(microseconds: 1_700_000_000_000_000 + Int64((seconds * 1e6).rounded()))
    }
}

/// A place as a Wi-Fi radio hears it: access points with a mean signal, each heard in a scan with some
/// probability, its signal jittered uniformly by up to ``jitter`` dB either way.
struct SimulatedPlace {
    /// One access point of the place.
    struct Transmitter {
        var number: Int
        var meanSignal: Int
        /// The chance that a scan hears it at all.
        var presence: Double
    }

    var transmitters: [Transmitter]
    var jitter = 8

    /// A typical flat: 4 strong access points (−45…−63 dBm), 4 medium (−68…−79), always heard; 12 weak ones
    /// (−81…−95) that each scan hears with a probability of 0.6. Numbers start at `base`.
    static func flat(base: Int) -> SimulatedPlace {
        var transmitters: [Transmitter] = []
        for (index, signal) in [-45, -52, -58, -63, -68, -72, -76, -79].enumerated() {
            transmitters.append(Transmitter(number: base + index, meanSignal: signal, presence: 1))
        }
        for index in 0..<12 {
            transmitters.append(Transmitter(number: base + 8 + index, meanSignal: -81 - index * 14 / 11, presence: 0.6))
        }
        return SimulatedPlace(transmitters: transmitters)
    }

    /// One scan.
    func scan(using generator: inout SplitMix64) -> [AccessPoint] {
        var heard: [AccessPoint] = []
        for transmitter in transmitters {
            let present = Double(generator.next() >> 11) / Double(1 << 53) < transmitter.presence
            let offset = Int(generator.next() % UInt64(2 * jitter + 1)) - jitter
            if present { heard.append(WiFiFixtures.accessPoint(transmitter.number, transmitter.meanSignal + offset)) }
        }
        return heard
    }
}
