import WhereaboutsCore

/// Which constellation, and which satellite of it, a number in a GSV or GSA sentence names.
///
/// NMEA 0183 4.11 gives each system its talker (`GP` GPS, `GL` GLONASS, `GA` Galileo, `GB` or `BD` BeiDou, `GQ`
/// QZSS, `GI` NavIC) and each satellite its own id in it; a `GN` GSA names its system in its last field. Receivers
/// before 4.11, and `GP` or `GN` sentences listing several systems, number all satellites in one range instead, as
/// gpsd's NMEA driver reads them (`driver_nmea0183.c`, `nmeaid_to_prn`) and u-blox documents them (the "NMEA 4.0
/// extended" numbering of the u-blox 8 receiver description, appendix "Satellite numbering"):
///
/// | Numbers | System | Id |
/// |---|---|---|
/// | 1–32 | GPS | the number |
/// | 33–64 | SBAS | number + 87: PRN 120–151 |
/// | 65–96 | GLONASS | number − 64: slot 1–32 |
/// | 120–158 | SBAS | the number (the PRN) |
/// | 193–202 | QZSS | number − 192: 1–10 |
/// | 201–263 | BeiDou | number − 200 (some receivers; 201 and 202 are read as QZSS's) |
/// | 301–336 | Galileo | number − 300 |
/// | 401–463 | BeiDou | number − 400 |
///
/// With a system's own talker (or a GSA's system id) other than GPS, its own ids are read as they are (GLONASS
/// 1–32, Galileo 1–36, BeiDou 1–63, QZSS 1–10, NavIC 1–14), and that system's numbers of the table are taken back
/// to them; a `GP` talker is read by the table, as receivers put SBAS, and before 4.11 every system, under it. A
/// number that fits nothing names no satellite, and is left out.
package enum NMEASatelliteNumbering {
    /// The satellite `number` names in a sentence of `talker`, with the GSA's `systemID` when it has one.
    package static func satellite(number: Int, talker: String, systemID: Int? = nil) -> (Constellation, UInt32)? {
        let system = systemID.flatMap(constellation(systemID:)) ?? constellation(talker: talker)
        // A GPS talker also lists SBAS satellites, and before 4.11 every system's: read as GN.
        guard let system, system != .gps else {
            return extendedRanges.first { $0.numbers.contains(number) }.map {
                ($0.constellation, UInt32(number - $0.offset))
            }
        }
        return ranges[system]?.first { $0.numbers.contains(number) }.map { (system, UInt32(number - $0.offset)) }
    }

    /// The table's numbering, where 201 and 202, in two ranges, are QZSS's: the id is the number less the offset.
    private static let extendedRanges: [(numbers: ClosedRange<Int>, constellation: Constellation, offset: Int)] = [
        (1...32, .gps, 0), (33...64, .sbas, -87), (65...96, .glonass, 64), (120...158, .sbas, 0),
        (193...202, .qzss, 192), (201...263, .beidou, 200), (301...336, .galileo, 300), (401...463, .beidou, 400),
    ]

    /// Each system's own ids, then its numbers of the table, with the offset taken off them.
    private static let ranges: [Constellation: [(numbers: ClosedRange<Int>, offset: Int)]] = [
        .glonass: [(1...32, 0), (65...96, 64)],
        .galileo: [(1...36, 0), (301...336, 300)],
        .beidou: [(1...63, 0), (201...263, 200), (401...463, 400)],
        .qzss: [(1...10, 0), (193...202, 192)],
        .navic: [(1...14, 0)],
    ]

    /// The constellation of NMEA 4.11's system id.
    static func constellation(systemID: Int) -> Constellation? {
        switch systemID {
        case 1: .gps
        case 2: .glonass
        case 3: .galileo
        case 4: .beidou
        case 5: .qzss
        case 6: .navic
        default: nil
        }
    }

    /// The constellation a talker speaks for; nil for `GN` (several) and anything unknown.
    private static func constellation(talker: String) -> Constellation? {
        switch talker {
        case "GP": .gps
        case "GL": .glonass
        case "GA": .galileo
        case "GB", "BD": .beidou
        case "GQ", "QZ": .qzss
        case "GI": .navic
        default: nil
        }
    }
}
