/// What kind of satellite fix a position is: `io.github.whereabouts1.Location.FixType`, gpsd's TPV `mode` and
/// `status`, NMEA's GSA fix mode and GGA quality.
public enum FixType: String, Sendable, CaseIterable {
    /// No satellite fix: the position came from elsewhere, or the receiver did not say.
    case none = "none"
    /// Latitude and longitude only.
    case twoDimensional = "2d"
    /// Latitude, longitude and altitude.
    case threeDimensional = "3d"
    /// Corrected by a differential station (DGPS, or SBAS).
    case differential = "dgps"
    /// Real-time kinematic, ambiguities not yet resolved.
    case rtkFloat = "rtk-float"
    /// Real-time kinematic, ambiguities resolved: centimetres.
    case rtkFixed = "rtk-fixed"
}
