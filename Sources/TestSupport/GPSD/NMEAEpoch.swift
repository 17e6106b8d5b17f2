import Foundation
import Glibc
import Loop
import Synchronization

/// NMEA 0183 helpers.
public enum NMEA {
    /// `$body*HH\r\n`, HH being the XOR of the body's bytes.
    public static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0), ^)
        return "$" + body + "*" + String(format: "%02X", checksum) + "\r\n"
    }

    /// The wall clock now, in seconds since the Unix epoch, cut to the hundredths NMEA times carry.
    public static func wallNow() -> Double { Double(wallMicroseconds() / 10_000) / 100 }
}

/// One receiver epoch as NMEA: GGA, GSA and RMC, then GST when asked, in the order receivers send them.
public struct NMEAEpoch: Sendable, Equatable {
    /// The fix time, seconds since the Unix epoch (UTC); hundredths are kept.
    public var time: Double
    /// Degrees north.
    public var latitude: Double
    /// Degrees east.
    public var longitude: Double
    /// Metres above mean sea level (GGA's altitude).
    public var altitude: Double
    /// Geoid height above the ellipsoid, metres (GGA).
    public var geoidSeparation: Double
    /// Speed over ground in knots (RMC).
    public var speedKnots: Double
    /// Course over ground in degrees (RMC).
    public var course: Double
    /// Horizontal dilution of precision (GGA and GSA).
    public var hdop: Double
    /// Whether a GST (pseudorange error statistics) sentence ends the epoch.
    public var includesGST: Bool
    /// Whether the epoch lists the satellites in view: a GPGSV sequence of five GPS satellites (4, 5 and 9 among
    /// those the GSA uses; 7 and 30 not) and a GLGSV of GLONASS slots 6 and 7.
    public var includesSky = false
    /// Added to each satellite's C/N0 in the sky (dB-Hz), so that consecutive epochs' skies differ as a real
    /// receiver's do.
    public var signalOffset = 0

    public init(
        time: Double, latitude: Double, longitude: Double, altitude: Double = 545.4, geoidSeparation: Double = 46.9,
        speedKnots: Double = 22.4, course: Double = 84.4, hdop: Double = 0.9, includesGST: Bool = false
    ) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.geoidSeparation = geoidSeparation
        self.speedKnots = speedKnots
        self.course = course
        self.hdop = hdop
        self.includesGST = includesGST
    }

    /// Speed over ground in metres per second.
    public var speed: Double { speedKnots * 1852 / 3600 }

    /// The sentences, each with its checksum and CRLF.
    public var sentences: [String] {
        let centiseconds = Int64((time * 100).rounded())
        var seconds = time_t(centiseconds / 100)
        var utc = tm()
        gmtime_r(&seconds, &utc)
        let clock = String(format: "%02d%02d%02d.%02d", utc.tm_hour, utc.tm_min, utc.tm_sec, Int32(centiseconds % 100))
        let date = String(format: "%02d%02d%02d", utc.tm_mday, utc.tm_mon + 1, utc.tm_year % 100)
        let north = NMEAEpoch.angle(latitude, degreeDigits: 2, positive: "N", negative: "S")
        let east = NMEAEpoch.angle(longitude, degreeDigits: 3, positive: "E", negative: "W")
        let dop = String(format: "%.2f", hdop)
        var lines = [
            NMEA.sentence(
                "GPGGA,\(clock),\(north),\(east),1,08,\(dop),\(String(format: "%.1f", altitude)),M,"
                    + "\(String(format: "%.1f", geoidSeparation)),M,,"),
            NMEA.sentence(
                "GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,\(String(format: "%.2f", hdop * 2)),\(dop),"
                    + String(format: "%.2f", hdop * 1.6)),
            NMEA.sentence(
                "GPRMC,\(clock),A,\(north),\(east),\(String(format: "%.3f", speedKnots)),"
                    + "\(String(format: "%.2f", course)),\(date),,,A"),
        ]
        if includesGST { lines.append(NMEA.sentence("GPGST,\(clock),1.0,2.5,1.5,45.0,2.0,1.8,3.2")) }
        if includesSky {
            let signal = { (base: Int) in String(base + signalOffset) }
            lines += [
                NMEA.sentence(
                    "GPGSV,2,1,05,04,60,100,\(signal(45)),05,30,200,\(signal(40)),07,10,300,,09,45,010,\(signal(38))"),
                NMEA.sentence("GPGSV,2,2,05,30,25,150,\(signal(35))"),
                NMEA.sentence("GLGSV,1,1,02,70,45,060,\(signal(33)),71,12,250,\(signal(29))"),
            ]
        }
        return lines
    }

    /// The epoch as one block of text.
    public var text: String { sentences.joined() }

    /// `ddmm.mmmmmm,N` or `dddmm.mmmmmm,E`.
    private static func angle(_ value: Double, degreeDigits: Int, positive: String, negative: String) -> String {
        let magnitude = abs(value)
        let degrees = Int(magnitude)
        let minutes = (magnitude - Double(degrees)) * 60
        let format = degreeDigits == 2 ? "%02d%09.6f" : "%03d%09.6f"
        return String(format: format, degrees, minutes) + "," + (value < 0 ? negative : positive)
    }
}
