extension ServingCell {
    /// The serving cell from ModemManager's 3GPP location (the `MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI` entry of
    /// `org.freedesktop.ModemManager1.Modem.Location`'s `Location` or `GetLocation()`) and the modem's
    /// `AccessTechnologies`.
    ///
    /// ModemManager writes the location as `MCC,MNC,LAC,CI,TAC` (libmm-glib's `mm_location_3gpp_get_string_variant`,
    /// `"%.3s,%s,%lX,%lX,%lX"`): the country code's three digits, the network code's two or three, then the
    /// location area code, cell id and tracking area code in upper-case hexadecimal without leading zeros, 0 for one
    /// it does not have. A GSM cell reads `262,01,1A2B,3C4D,0`, an LTE one `310,410,0,8A1B2C3,5A1F`, an NR one
    /// `262,01,0,1A2B3C4D5,1F0A3C`.
    ///
    /// The radio comes from `accessTechnologies` (``AccessTechnologies/cellRadio``); the area code is the TAC field
    /// for LTE and NR and the LAC field for GSM and UMTS, whatever the other holds (a modem may keep a stale one).
    /// Checked in this order: the radio, five fields, three decimal digits of country code, two or three of network
    /// code, each of LAC, CI and TAC hexadecimal digits (either case), and then the identifiers as
    /// ``init(radio:mobileCountryCode:mobileNetworkCode:areaCode:cellID:)`` checks them.
    ///
    /// - Throws: ``CellLocationError`` for the first problem found.
    public init(modemManagerLocation text: String, accessTechnologies: AccessTechnologies) throws(CellLocationError) {
        guard let radio = accessTechnologies.cellRadio else { throw .noCellularRadio(accessTechnologies) }
        let fields = text.split(separator: ",", omittingEmptySubsequences: false)
        guard fields.count == 5 else { throw .fieldCount(fields.count) }
        guard let countryCode = Self.decimal(fields[0], digits: 3...3) else {
            throw .malformedCountryCode(String(fields[0]))
        }
        guard let networkCode = Self.decimal(fields[1], digits: 2...3) else {
            throw .malformedNetworkCode(String(fields[1]))
        }
        let locationAreaCode = try Self.hexadecimal(fields[2], field: .locationAreaCode)
        let cellID = try Self.hexadecimal(fields[3], field: .cellID)
        let trackingAreaCode = try Self.hexadecimal(fields[4], field: .trackingAreaCode)
        try self.init(
            radio: radio, mobileCountryCode: countryCode, mobileNetworkCode: networkCode,
            areaCode: radio.hasTrackingArea ? trackingAreaCode : locationAreaCode, cellID: cellID)
    }

    /// The value of `text` when it is a count in `digits` of ASCII decimal digits; nil otherwise.
    private static func decimal(_ text: Substring, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        return Int(text)
    }

    /// The value of `text`, one or more ASCII hexadecimal digits; `Int.max` when it has more than an `Int` holds,
    /// which no field allows.
    private static func hexadecimal(
        _ text: Substring, field: CellLocationError.Field
    ) throws(CellLocationError) -> Int {
        guard !text.isEmpty, text.utf8.allSatisfy(isHexadecimalDigit) else {
            throw .notHexadecimal(field, String(text))
        }
        return Int(text, radix: 16) ?? Int.max
    }

    /// True for the ASCII digits and the letters a–f and A–F.
    private static func isHexadecimalDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
