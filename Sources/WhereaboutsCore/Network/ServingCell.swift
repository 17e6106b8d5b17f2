/// The mobile network cell a modem is registered on, by the identifiers an Ichnaea-compatible service looks it up
/// by: radio, mobile country and network codes, area code and cell id.
///
/// A value always holds identifiers such a service can look up (the initialiser checks them), so a query never
/// carries an entry that the service would drop or, worse, refuse the whole request for (beaconDB reads the body
/// strictly).
///
/// Privacy: a cell's identifiers are those of public infrastructure, broadcast by the operator to every phone in
/// range, not of anyone's own equipment; there is no opt-out convention for them like a Wi-Fi network's `_nomap`,
/// and none is needed. Sending the serving cell still tells the service roughly where the machine is, as access
/// points do, so it is sent only where a network position is allowed. Only the five identifiers are sent: no
/// signal strength, timing advance or neighbour cells, and nothing of the SIM (`homeMobileCountryCode`,
/// `carrier`).
///
/// Not submitted: beaconDB keeps a submitted cell only with its primary scrambling code or physical cell id,
/// which ModemManager's 3GPP location does not carry.
public struct ServingCell: Sendable, Hashable, CustomStringConvertible {
    /// The radio.
    public let radio: CellRadio
    /// The mobile country code (MCC), 200…799.
    public let mobileCountryCode: Int
    /// The mobile network code (MNC), 0…999. Ichnaea takes it as a number, so `01` and `001` are the same network
    /// to it, and the digit count is not kept.
    public let mobileNetworkCode: Int
    /// The location area code for GSM and UMTS, the tracking area code for LTE and NR: Ichnaea's
    /// `locationAreaCode`, which carries either.
    public let areaCode: Int
    /// The cell id: the 16-bit CI of GSM, the 28-bit UTRAN cell id of UMTS, the 28-bit E-UTRAN cell id of LTE, the
    /// 36-bit NR cell id.
    public let cellID: Int

    /// A cell with these identifiers, checked in this order:
    ///
    /// 1. the country code is in 200…799 (``CellLocationError/countryCodeNotGeographic(_:)``);
    /// 2. the network code is in 0…999 (``CellLocationError/malformedNetworkCode(_:)``);
    /// 3. the area code is not 0 and not one of the two largest values of the radio's field, 0xFFFE and 0xFFFF
    ///    (0xFFFFFE and 0xFFFFFF for NR): 0 and 0xFFFE are reserved (3GPP TS 24.008) and all ones is what modems
    ///    report for "unknown" (``CellLocationError/unknownPlaceholder(_:_:)``); larger than
    ///    ``CellRadio/largestAreaCode`` is ``CellLocationError/outOfRange(_:_:_:)``. What remains for a 16-bit code
    ///    is Ichnaea's accepted 1…65533;
    /// 4. the cell id is not 0, 0xFFFFFFFF or 0xFFFFFFFE (the "unknown" of 32-bit modem interfaces) and not all
    ///    ones in the radio's width (0xFFFF for GSM, 0xFFFFFFF for UMTS and LTE, 0xFFFFFFFFF for NR), and is at
    ///    most ``CellRadio/largestCellID`` (the width of the field; Ichnaea's own limits are 65535 for GSM and
    ///    2^28 − 1 for the others).
    ///
    /// - Throws: ``CellLocationError`` for the first rule broken.
    public init(
        radio: CellRadio, mobileCountryCode: Int, mobileNetworkCode: Int, areaCode: Int, cellID: Int
    ) throws(CellLocationError) {
        guard (200...799).contains(mobileCountryCode) else {
            throw .countryCodeNotGeographic(mobileCountryCode)
        }
        guard (0...999).contains(mobileNetworkCode) else { throw .malformedNetworkCode(String(mobileNetworkCode)) }
        let areaField: CellLocationError.Field = radio.hasTrackingArea ? .trackingAreaCode : .locationAreaCode
        guard (0...radio.largestAreaCode).contains(areaCode) else { throw .outOfRange(areaField, areaCode, radio) }
        guard areaCode != 0, areaCode < radio.largestAreaCode - 1 else {
            throw .unknownPlaceholder(areaField, areaCode)
        }
        guard !Self.unknownCellIDs.contains(cellID) else { throw .unknownPlaceholder(.cellID, cellID) }
        guard (0...radio.largestCellID).contains(cellID) else { throw .outOfRange(.cellID, cellID, radio) }
        guard cellID != radio.largestCellID else { throw .unknownPlaceholder(.cellID, cellID) }
        self.radio = radio
        self.mobileCountryCode = mobileCountryCode
        self.mobileNetworkCode = mobileNetworkCode
        self.areaCode = areaCode
        self.cellID = cellID
    }

    /// The cell ids that mean "unknown" whatever the radio: 0, and the 32-bit 0xFFFFFFFF and 0xFFFFFFFE.
    private static let unknownCellIDs: Set = [0, 0xFFFF_FFFF, 0xFFFF_FFFE]

    /// `<radio> <MCC>-<MNC> <LAC|TAC> <hex> CI <hex>`, e.g. `lte 262-1 TAC 5A1F CI 8A1B2C3`: for logs.
    public var description: String {
        let area = radio.hasTrackingArea ? "TAC" : "LAC"
        return "\(radio.ichnaeaName) \(mobileCountryCode)-\(mobileNetworkCode) \(area) "
            + "\(String(areaCode, radix: 16, uppercase: true)) CI \(String(cellID, radix: 16, uppercase: true))"
    }
}
