/// The position of the CDMA base station a modem is using, as ModemManager's CDMA base station location
/// (`MM_MODEM_LOCATION_SOURCE_CDMA_BS`, a dictionary of `latitude` and `longitude`, degrees as doubles) gives it.
///
/// Ichnaea has no CDMA cells, so there is nothing to look up: the base station's own position is a coarse fix of
/// the modem, within the cell's reach. GeoClue takes it with an accuracy of 1 km (``assumedAccuracy``).
public struct CDMABaseStation: Sendable, Equatable {
    /// The accuracy, in metres, a base station position is taken with: GeoClue's, the size of a city cell. A rural
    /// cell reaches further, so this is optimistic there.
    public static let assumedAccuracy = 1_000.0

    /// Degrees north, WGS84.
    public let latitude: Double
    /// Degrees east, WGS84.
    public let longitude: Double

    /// The base station at `latitude`, `longitude`.
    ///
    /// - Throws: ``CellLocationError/invalidBaseStationPosition(latitude:longitude:)`` unless the latitude is a
    ///   finite number in −90…90 and the longitude one in −180…180, or when both are exactly 0, the position a
    ///   modem with nothing to say reports (there is no base station at 0° N 0° E, in the Gulf of Guinea).
    ///   ModemManager's own "unknown", −DBL_MAX, never reaches the dictionary, but is out of range too.
    public init(latitude: Double, longitude: Double) throws(CellLocationError) {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude), (-180...180).contains(longitude),
            latitude != 0 || longitude != 0
        else { throw .invalidBaseStationPosition(latitude: latitude, longitude: longitude) }
        self.latitude = latitude
        self.longitude = longitude
    }
}
