import DBus
import WhereaboutsCore

/// GeoClue2's names, paths and interface tables, as the interface XML in `dbus/` describes them.
enum GeoClue {
    static let busName = BusNames.GeoClue.busName
    static let managerPath = ObjectPath(BusNames.GeoClue.managerPath)!
    static let clientRoot = ObjectPath(BusNames.GeoClue.clientRoot)!
    static let agentPath = ObjectPath(BusNames.GeoClue.agentPath)!
    /// The annotation GeoClue's interface file gives the thresholds: their default, 0.
    static let defaultZero = ["org.freedesktop.Accounts.DefaultValue": "0"]

    static let managerInterface = BusNames.GeoClue.managerInterface
    static let clientInterface = BusNames.GeoClue.clientInterface
    static let locationInterface = BusNames.GeoClue.locationInterface

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
            PropertyDescription("DistanceThreshold", "u", .readwrite, annotations: GeoClue.defaultZero),
            PropertyDescription("TimeThreshold", "u", .readwrite, annotations: GeoClue.defaultZero),
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

/// Whereabouts' own interfaces, version 1, served on the same objects as GeoClue's (`dbus/io.github.whereabouts1.*.xml`).
enum Whereabouts {
    static let managerInterface = BusNames.Whereabouts.managerInterface
    static let clientInterface = BusNames.Whereabouts.clientInterface
    static let locationInterface = BusNames.Whereabouts.locationInterface

    /// Error names under `io.github.whereabouts1.Error.`.
    typealias Error = BusNames.Whereabouts.Error

    /// `io.github.whereabouts1.Manager`.
    static let manager = InterfaceDescription(
        managerInterface,
        methods: [
            MethodDescription(
                "ListGrants", inputs: [Argument("all_users", "b")], outputs: [Argument("grants", "a(ussbb)")]),
            MethodDescription("RevokeGrant", inputs: [Argument("uid", "u"), Argument("app", "s")]),
            MethodDescription(
                "SetStaticLocation",
                inputs: [
                    Argument("latitude", "d"), Argument("longitude", "d"), Argument("altitude", "d"),
                    Argument("accuracy", "d"),
                ]),
            MethodDescription("ClearStaticLocation"),
            MethodDescription("Simulate", inputs: [Argument("track", "s"), Argument("options", "a{sv}")]),
            MethodDescription("StopSimulation"),
            MethodDescription(
                "GetHistory", inputs: [Argument("all_users", "b"), Argument("since", "t")],
                outputs: [Argument("uses", "a(usttubas)"), Argument("lookups", "a(utssuusdas)")]),
            MethodDescription("ClearHistory", inputs: [Argument("uid", "u")]),
        ],
        properties: [
            PropertyDescription("LocationServicesEnabled", "b", .readwrite),
            PropertyDescription("Providers", "a(subba{sv})", .read),
            PropertyDescription("ActiveApps", "as", .read),
            PropertyDescription("Simulating", "b", .read),
            PropertyDescription("RegionLevel", "u", .read),
            PropertyDescription("WatchedRegions", "u", .read),
        ],
        signals: [SignalDescription("SimulationEnded", arguments: [Argument("reason", "s")])])

    /// `io.github.whereabouts1.Client`.
    static let client = InterfaceDescription(
        clientInterface,
        methods: [
            MethodDescription(
                "RequestLocation", inputs: [Argument("options", "a{sv}")], outputs: [Argument("location", "o")]),
            MethodDescription(
                "RequestAuthorisation", inputs: [Argument("grant", "s"), Argument("options", "a{sv}")],
                outputs: [Argument("status", "s")]),
            MethodDescription("CheckAuthorisation", outputs: [Argument("status", "s")]),
            MethodDescription(
                "AddRegion",
                inputs: [
                    Argument("id", "s"), Argument("latitude", "d"), Argument("longitude", "d"), Argument("radius", "d"),
                    Argument("options", "a{sv}"),
                ],
                outputs: [Argument("watched_radius", "d")]),
            MethodDescription("RemoveRegion", inputs: [Argument("id", "s")]),
            MethodDescription("ListRegions", outputs: [Argument("regions", "a(sddda{sv})")]),
            MethodDescription("PendingRegionEvents", outputs: [Argument("events", "a(sstddd)")]),
        ],
        properties: [
            PropertyDescription("AuthorisationStatus", "s", .read),
            PropertyDescription("Approximate", "b", .read),
            PropertyDescription("Available", "b", .read),
            PropertyDescription("LastLocation", "o", .read),
            PropertyDescription("HighAccuracy", "b", .readwrite),
            PropertyDescription("MinimumUpdateDistance", "d", .readwrite),
            PropertyDescription("MonitoringTimeout", "u", .readwrite),
            PropertyDescription("AppIdentity", "s", .read),
            PropertyDescription("DesktopHint", "s", .read),
            PropertyDescription(
                "Satellites", "a(sudddb)", .read,
                annotations: ["org.freedesktop.DBus.Property.EmitsChangedSignal": "false"]),
        ],
        signals: [
            SignalDescription("AvailabilityChanged", arguments: [Argument("available", "b"), Argument("reason", "s")]),
            SignalDescription("UpdatesTimedOut"),
            SignalDescription(
                "RegionChanged",
                arguments: [
                    Argument("id", "s"), Argument("state", "s"), Argument("timestamp", "t"), Argument("latitude", "d"),
                    Argument("longitude", "d"), Argument("accuracy", "d"),
                ]),
            SignalDescription("RegionsRemoved", arguments: [Argument("ids", "as"), Argument("reason", "s")]),
            SignalDescription("SatellitesChanged", arguments: [Argument("satellites", "a(sudddb)")]),
        ])

    /// `io.github.whereabouts1.Location`.
    static let location = InterfaceDescription(
        locationInterface,
        properties: [
            PropertyDescription("Latitude", "d", .read),
            PropertyDescription("Longitude", "d", .read),
            PropertyDescription("HorizontalAccuracy", "d", .read),
            PropertyDescription("Altitude", "d", .read),
            PropertyDescription("EllipsoidalAltitude", "d", .read),
            PropertyDescription("VerticalAccuracy", "d", .read),
            PropertyDescription("Speed", "d", .read),
            PropertyDescription("SpeedAccuracy", "d", .read),
            PropertyDescription("Course", "d", .read),
            PropertyDescription("CourseAccuracy", "d", .read),
            PropertyDescription("Climb", "d", .read),
            PropertyDescription("ClimbAccuracy", "d", .read),
            PropertyDescription("MagneticHeading", "d", .read),
            PropertyDescription("TrueHeading", "d", .read),
            PropertyDescription("HeadingAccuracy", "d", .read),
            PropertyDescription("Provider", "s", .read),
            PropertyDescription("Simulated", "b", .read),
            PropertyDescription("Stale", "b", .read),
            PropertyDescription("TimestampMilliseconds", "t", .read),
            PropertyDescription("FixType", "s", .read),
            PropertyDescription("HDOP", "d", .read),
            PropertyDescription("VDOP", "d", .read),
            PropertyDescription("PDOP", "d", .read),
        ])
}
