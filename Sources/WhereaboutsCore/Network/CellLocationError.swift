/// Why a modem's location gives no cell to ask a positioning service about, or no base station position.
///
/// None of these is a fault to report loudly: a modem between registrations, on CDMA or on a test network has no
/// cell to look up, and the caller sends no cell in its query.
public enum CellLocationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A numeric field of ModemManager's 3GPP location.
    public enum Field: Sendable, Equatable, CustomStringConvertible {
        /// The location area code (LAC) of a GSM or UMTS cell.
        case locationAreaCode
        /// The tracking area code (TAC) of an LTE or NR cell.
        case trackingAreaCode
        /// The cell id (CI).
        case cellID

        /// The field's name.
        public var description: String {
            switch self {
            case .locationAreaCode: "location area code"
            case .trackingAreaCode: "tracking area code"
            case .cellID: "cell ID"
            }
        }
    }

    /// The modem's access technologies have no 3GPP radio (``AccessTechnologies/cellRadio`` is nil).
    case noCellularRadio(AccessTechnologies)
    /// The location text has this many comma-separated fields, not the five of `MCC,MNC,LAC,CI,TAC`.
    case fieldCount(Int)
    /// The mobile country code is not three decimal digits.
    case malformedCountryCode(String)
    /// The mobile network code is not two or three decimal digits (0…999).
    case malformedNetworkCode(String)
    /// The mobile country code is outside 200…799, the codes of countries (ITU-T E.212): 001 is the test network
    /// of lab base stations, 901 the international codes of satellite, maritime and in-flight networks, 999
    /// internal use. None says where the modem is, and Ichnaea ignores a cell whose code is not a country's.
    case countryCodeNotGeographic(Int)
    /// A LAC, CI or TAC is not hexadecimal digits.
    case notHexadecimal(Field, String)
    /// A LAC, TAC or CI is a value modems report when they do not know it: 0, all ones in the field's width, the
    /// reserved "deleted" area code one below that, or the 32-bit 0xFFFFFFFF and 0xFFFFFFFE of a cell id.
    case unknownPlaceholder(Field, Int)
    /// A LAC, TAC or CI is larger than the radio's field can hold, or negative.
    case outOfRange(Field, Int, CellRadio)
    /// A CDMA base station position that is not a place: not finite, out of −90…90 and −180…180, or exactly
    /// 0, 0.
    case invalidBaseStationPosition(latitude: Double, longitude: Double)

    /// A human explanation.
    public var description: String {
        switch self {
        case .noCellularRadio(let technologies):
            if technologies.rawValue == 0 { return "the modem reports no access technology" }
            return "the modem's access technologies (\(technologies)) have no 3GPP cell"
        case .fieldCount(let count):
            return "\(count) fields; a 3GPP location has five: MCC,MNC,LAC,CI,TAC"
        case .malformedCountryCode(let text):
            return "mobile country code \(Self.shown(text)) is not three decimal digits"
        case .malformedNetworkCode(let text):
            return "mobile network code \(Self.shown(text)) is not two or three decimal digits"
        case .countryCodeNotGeographic(let code):
            return "mobile country code \(Self.threeDigits(code)) is not a country's (200...799)"
        case .notHexadecimal(let field, let text):
            return "\(field) \(Self.shown(text)) is not hexadecimal"
        case .unknownPlaceholder(let field, let value):
            return "\(field) \(Self.hex(value)) is what modems report when they do not know it"
        case .outOfRange(let field, let value, let radio):
            return "\(field) \(Self.hex(value)) is out of range for \(radio.ichnaeaName)"
        case .invalidBaseStationPosition(let latitude, let longitude):
            return "base station position \(latitude), \(longitude) is not a place"
        }
    }

    /// `text` quoted, cut to 40 characters.
    private static func shown(_ text: String) -> String {
        "'" + (text.count > 40 ? text.prefix(40) + "…" : text) + "'"
    }

    /// `value` in upper-case hexadecimal, as ModemManager writes it.
    private static func hex(_ value: Int) -> String { String(value, radix: 16, uppercase: true) }

    /// `code` with leading zeros to three digits.
    private static func threeDigits(_ code: Int) -> String {
        let digits = String(code)
        return String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }
}
