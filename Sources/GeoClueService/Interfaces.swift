import DBus

/// GeoClue2's names, paths and interface tables, as the interface XML in `dbus/` describes them.
enum GeoClue {
    static let busName = "org.freedesktop.GeoClue2"
    static let managerPath = ObjectPath("/org/freedesktop/GeoClue2/Manager")!
    static let clientRoot = ObjectPath("/org/freedesktop/GeoClue2/Client")!
    static let agentPath = ObjectPath("/org/freedesktop/GeoClue2/Agent")!

    static let managerInterface = "org.freedesktop.GeoClue2.Manager"
    static let clientInterface = "org.freedesktop.GeoClue2.Client"
    static let locationInterface = "org.freedesktop.GeoClue2.Location"

    /// `org.freedesktop.GeoClue2.Manager`.
    static let manager = InterfaceDescription(
        managerInterface,
        methods: [
            MethodDescription("GetClient", outputs: [Argument("client", "o")]),
            MethodDescription("CreateClient", outputs: [Argument("client", "o")]),
            MethodDescription("DeleteClient", inputs: [Argument("client", "o")]),
            MethodDescription("AddAgent", inputs: [Argument("id", "s")]),
        ],
        properties: [
            PropertyDescription("InUse", "b", .read),
            PropertyDescription("AvailableAccuracyLevel", "u", .read),
        ])

    /// `org.freedesktop.GeoClue2.Client`.
    static let client = InterfaceDescription(
        clientInterface,
        methods: [MethodDescription("Start"), MethodDescription("Stop")],
        properties: [
            PropertyDescription("Location", "o", .read),
            PropertyDescription("DistanceThreshold", "u", .readwrite),
            PropertyDescription("TimeThreshold", "u", .readwrite),
            PropertyDescription("DesktopId", "s", .readwrite),
            PropertyDescription("RequestedAccuracyLevel", "u", .readwrite),
            PropertyDescription("Active", "b", .read),
        ],
        signals: [SignalDescription("LocationUpdated", arguments: [Argument("old", "o"), Argument("new", "o")])])

    /// `org.freedesktop.GeoClue2.Location`.
    static let location = InterfaceDescription(
        locationInterface,
        properties: [
            PropertyDescription("Latitude", "d", .read),
            PropertyDescription("Longitude", "d", .read),
            PropertyDescription("Accuracy", "d", .read),
            PropertyDescription("Altitude", "d", .read),
            PropertyDescription("Speed", "d", .read),
            PropertyDescription("Heading", "d", .read),
            PropertyDescription("Description", "s", .read),
            PropertyDescription("Timestamp", "(tt)", .read),
        ])

    /// GeoClue's "unknown" value for `Altitude`: `-DBL_MAX`.
    static let unknownAltitude = -Double.greatestFiniteMagnitude
    /// GeoClue's "unknown" value for `Speed` and `Heading`.
    static let unknownSpeedOrHeading = -1.0
}
