/// The radio of a 3GPP mobile network cell, one of the four Ichnaea-compatible services tell apart by `radioType`.
///
/// Each radio has its own identifiers: a GSM or UMTS cell sits in a location area (LAC, 16 bits), an LTE or NR
/// cell in a tracking area (TAC, 16 bits for LTE and 24 for NR); the cell's own id is 16 bits for GSM, 28 for UMTS
/// (12 bits of radio network controller and 16 of cell), 28 for LTE (20 of eNodeB and 8 of cell) and 36 for NR
/// (3GPP TS 23.003). The same numbers on two radios are two different cells.
public enum CellRadio: Sendable, Hashable, CaseIterable {
    /// GSM, with GPRS or EDGE (2G).
    case gsm
    /// UMTS, with HSPA or HSPA+ (3G).
    case wcdma
    /// LTE, including LTE Cat-M and NB-IoT (4G).
    case lte
    /// 5G NR on its own (standalone). beaconDB knows it; Mozilla's Ichnaea knows only `gsm`, `wcdma` and `lte` and
    /// refuses a whole request naming `nr` with 400 `parseError`.
    case nr

    /// The `radioType` of a `cellTowers` entry: `gsm`, `wcdma`, `lte` or `nr`.
    public var ichnaeaName: String {
        switch self {
        case .gsm: "gsm"
        case .wcdma: "wcdma"
        case .lte: "lte"
        case .nr: "nr"
        }
    }

    /// True when the cell's area is a tracking area (LTE, NR), false when it is a location area (GSM, UMTS).
    public var hasTrackingArea: Bool { self == .lte || self == .nr }

    /// The largest area code the radio's field can hold: 2^16 − 1 for a LAC and an LTE TAC, 2^24 − 1 for an NR
    /// TAC.
    public var largestAreaCode: Int { self == .nr ? 0xFF_FFFF : 0xFFFF }

    /// The largest cell id the radio's field can hold: 2^16 − 1 for GSM, 2^28 − 1 for UMTS and LTE, 2^36 − 1 for
    /// NR.
    public var largestCellID: Int {
        switch self {
        case .gsm: 0xFFFF
        case .wcdma, .lte: 0xFFF_FFFF
        case .nr: 0xF_FFFF_FFFF
        }
    }
}
