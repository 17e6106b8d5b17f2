/// The radio technologies a modem is using, as ModemManager's `AccessTechnologies` property of
/// `org.freedesktop.ModemManager1.Modem` gives them: a bitmask of `MMModemAccessTechnology` values.
///
/// The mask often has several bits: a modem on HSPA+ with GPRS for packets, or one in E-UTRA–NR dual connectivity
/// (5G non-standalone), which ModemManager reports as `lte` and `5gnr` together. ``cellRadio`` picks the radio of
/// the cell that the 3GPP location describes.
public struct AccessTechnologies: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The `MMModemAccessTechnology` bits.
    public let rawValue: UInt32

    /// The technologies of the bits in `rawValue`.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Analog wireline telephone (`pots`, 1 << 0).
    public static let pots = AccessTechnologies(rawValue: 1 << 0)
    /// GSM (`gsm`, 1 << 1).
    public static let gsm = AccessTechnologies(rawValue: 1 << 1)
    /// Compact GSM (`gsm-compact`, 1 << 2).
    public static let gsmCompact = AccessTechnologies(rawValue: 1 << 2)
    /// GPRS (`gprs`, 1 << 3).
    public static let gprs = AccessTechnologies(rawValue: 1 << 3)
    /// EDGE (`edge`, 1 << 4).
    public static let edge = AccessTechnologies(rawValue: 1 << 4)
    /// UMTS (`umts`, 1 << 5).
    public static let umts = AccessTechnologies(rawValue: 1 << 5)
    /// HSDPA (`hsdpa`, 1 << 6).
    public static let hsdpa = AccessTechnologies(rawValue: 1 << 6)
    /// HSUPA (`hsupa`, 1 << 7).
    public static let hsupa = AccessTechnologies(rawValue: 1 << 7)
    /// HSPA (`hspa`, 1 << 8).
    public static let hspa = AccessTechnologies(rawValue: 1 << 8)
    /// HSPA+ (`hspa-plus`, 1 << 9).
    public static let hspaPlus = AccessTechnologies(rawValue: 1 << 9)
    /// CDMA2000 1xRTT (`1xrtt`, 1 << 10).
    public static let cdma1xRTT = AccessTechnologies(rawValue: 1 << 10)
    /// CDMA2000 EV-DO revision 0 (`evdo0`, 1 << 11).
    public static let evdo0 = AccessTechnologies(rawValue: 1 << 11)
    /// CDMA2000 EV-DO revision A (`evdoa`, 1 << 12).
    public static let evdoA = AccessTechnologies(rawValue: 1 << 12)
    /// CDMA2000 EV-DO revision B (`evdob`, 1 << 13).
    public static let evdoB = AccessTechnologies(rawValue: 1 << 13)
    /// LTE (`lte`, 1 << 14).
    public static let lte = AccessTechnologies(rawValue: 1 << 14)
    /// 5G NR (`5gnr`, 1 << 15).
    public static let nr = AccessTechnologies(rawValue: 1 << 15)
    /// LTE Cat-M (`lte-cat-m`, 1 << 16).
    public static let lteCatM = AccessTechnologies(rawValue: 1 << 16)
    /// LTE NB-IoT (`lte-nb-iot`, 1 << 17).
    public static let lteNBIoT = AccessTechnologies(rawValue: 1 << 17)
    /// ModemManager's `MM_MODEM_ACCESS_TECHNOLOGY_ANY`, every bit: a mask of what may be allowed, never a
    /// technology in use.
    public static let any = AccessTechnologies(rawValue: 0xFFFF_FFFF)

    /// The GSM technologies: GSM, compact GSM, GPRS, EDGE.
    public static let gsmFamily: AccessTechnologies = [.gsm, .gsmCompact, .gprs, .edge]
    /// The UMTS technologies: UMTS and its HSPA variants.
    public static let umtsFamily: AccessTechnologies = [.umts, .hsdpa, .hsupa, .hspa, .hspaPlus]
    /// The LTE technologies: LTE, Cat-M, NB-IoT.
    public static let lteFamily: AccessTechnologies = [.lte, .lteCatM, .lteNBIoT]

    /// The radio of the serving cell, or nil when no 3GPP technology is in use (none known, CDMA, an analog line,
    /// or ``any``).
    ///
    /// The most advanced technology in the mask wins, with one exception: NR together with an LTE technology is
    /// LTE. ModemManager reports `lte` and `5gnr` together for E-UTRA–NR dual connectivity (27.007 AcT 13, MBIM's
    /// 5G NSA data class, QMI's `endc_available`), where the modem is registered through its LTE anchor cell: the
    /// tracking area and cell id it reports are the LTE cell's, and sent as `nr` they would name a cell that does
    /// not exist. NR alone is standalone 5G. A mask with UMTS and GSM bits is UMTS; one with only GSM bits is GSM.
    public var cellRadio: CellRadio? {
        if self == .any { return nil }
        if !isDisjoint(with: .lteFamily) { return .lte }
        if contains(.nr) { return .nr }
        if !isDisjoint(with: .umtsFamily) { return .wcdma }
        if !isDisjoint(with: .gsmFamily) { return .gsm }
        return nil
    }

    /// ModemManager's names of the technologies, as `mmcli` shows them (`lte, 5gnr`); `unknown` for none and
    /// `any` for ``any``. Bits ModemManager does not define are shown as one hexadecimal value.
    public var description: String {
        if rawValue == 0 { return "unknown" }
        if self == .any { return "any" }
        var names = Self.names.filter { contains($0.technology) }.map(\.name)
        let undefined = rawValue & ~Self.names.reduce(0) { $0 | $1.technology.rawValue }
        if undefined != 0 { names.append("0x" + String(undefined, radix: 16)) }
        return names.joined(separator: ", ")
    }

    /// Each technology with ModemManager's name for it, in the order of the bits.
    private static let names: [(technology: AccessTechnologies, name: String)] = [
        (.pots, "pots"), (.gsm, "gsm"), (.gsmCompact, "gsm-compact"), (.gprs, "gprs"), (.edge, "edge"),
        (.umts, "umts"), (.hsdpa, "hsdpa"), (.hsupa, "hsupa"), (.hspa, "hspa"), (.hspaPlus, "hspa-plus"),
        (.cdma1xRTT, "1xrtt"), (.evdo0, "evdo0"), (.evdoA, "evdoa"), (.evdoB, "evdob"), (.lte, "lte"),
        (.nr, "5gnr"), (.lteCatM, "lte-cat-m"), (.lteNBIoT, "lte-nb-iot"),
    ]
}
