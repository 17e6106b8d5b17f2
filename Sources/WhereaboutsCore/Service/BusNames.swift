/// The names of the bus contract (`dbus/*.xml`), spelled once for the service, the client library and the tests.
public enum BusNames {
    /// GeoClue2's well-known name, object paths and interfaces.
    public enum GeoClue {
        public static let busName = "org.freedesktop.GeoClue2"
        public static let managerPath = "/org/freedesktop/GeoClue2/Manager"
        public static let clientRoot = "/org/freedesktop/GeoClue2/Client"
        public static let agentPath = "/org/freedesktop/GeoClue2/Agent"
        public static let managerInterface = "org.freedesktop.GeoClue2.Manager"
        public static let clientInterface = "org.freedesktop.GeoClue2.Client"
        public static let locationInterface = "org.freedesktop.GeoClue2.Location"
        public static let agentInterface = "org.freedesktop.GeoClue2.Agent"
    }

    /// Whereabouts' own interfaces, version 1, served on GeoClue's objects, and their errors.
    public enum Whereabouts {
        public static let managerInterface = "io.github.whereabouts1.Manager"
        public static let clientInterface = "io.github.whereabouts1.Client"
        public static let locationInterface = "io.github.whereabouts1.Location"

        /// Error names under `io.github.whereabouts1.Error.`.
        public enum Error {
            public static let timeout = "io.github.whereabouts1.Error.Timeout"
            public static let locationUnavailable = "io.github.whereabouts1.Error.LocationUnavailable"
            public static let permissionDenied = "io.github.whereabouts1.Error.PermissionDenied"
            public static let servicesDisabled = "io.github.whereabouts1.Error.ServicesDisabled"
            public static let limitsExceeded = "io.github.whereabouts1.Error.LimitsExceeded"
        }
    }
}
