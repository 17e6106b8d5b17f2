/// The daemon's validated configuration, read from a GeoClue-compatible `geoclue.conf`.
///
/// A GeoClue configuration carries over: `[agent]`, the app entries and every source group of GeoClue's
/// (`[static-source]`, `[network-nmea]`, `[wifi]`, `[ip]`, `[modem-gps]`, `[3g]`, `[cdma]` and `[compass]`) mean what
/// they mean to GeoClue. Whereabouts adds `[replay]`, `[gpsd]`, `[network]`, `[static-source] path=` and
/// `[modem-gps]`'s assistance keys (`assistance=`, `assistance-servers=`, `assistance-metered=`, `supl-server=`).
///
/// Every setting the file leaves out keeps its value from ``default``. Unlike GeoClue, where a source whose
/// `enable=` is missing is on, every Whereabouts source is off unless its group says `enable=true`.
/// A bad file is refused as a whole with a ``ConfigurationError``; nothing is silently skipped.
public struct Configuration: Sendable, Equatable {
    /// The desktop ids that may register as agents with `AddAgent` (`[agent] whitelist=`).
    public var agentWhitelist: [String]
    /// The app entries, keyed by desktop id (every group that is not a known section).
    public var apps: [String: AppEntry]
    /// The static location source (`[static-source]`).
    public var staticSource: StaticSourceConfig
    /// The replay of a recorded track (`[replay]`).
    public var replay: ReplayConfig
    /// The gpsd client (`[gpsd]`).
    public var gpsd: GPSDConfig
    /// How apps are authorised (`[authorisation]`).
    public var authorisation = AuthorisationConfig()
    /// The NMEA source (`[network-nmea]`).
    public var networkNMEA: NMEASocketConfig
    /// Wi-Fi and IP positioning through a web service (`[network]`, `[wifi]`, `[ip]`).
    public var network = NetworkPositioningConfig()
    /// The modem's sources through ModemManager (`[modem-gps]`, `[3g]`, `[cdma]`).
    public var modem = ModemConfig()
    /// iio-sensor-proxy's compass (`[compass]`).
    public var compass = CompassConfig()
    /// Keys given twice in one group (the last value holds), so that the daemon can warn naming both lines.
    public var duplicateKeys: [KeyFile.DuplicateKey] = []

    /// Makes a configuration; every argument left out takes its value from ``default``.
    public init(
        agentWhitelist: [String] = Configuration.defaultAgentWhitelist,
        apps: [String: AppEntry] = [:],
        staticSource: StaticSourceConfig = StaticSourceConfig(),
        replay: ReplayConfig = ReplayConfig(),
        gpsd: GPSDConfig = GPSDConfig(),
        networkNMEA: NMEASocketConfig = NMEASocketConfig()
    ) {
        self.agentWhitelist = agentWhitelist
        self.apps = apps
        self.staticSource = staticSource
        self.replay = replay
        self.gpsd = gpsd
        self.networkNMEA = networkNMEA
    }

    /// The configuration used when there is no file, and the base that a file's settings are merged onto:
    /// GeoClue's agent whitelist, no app entries, and every source off.
    ///
    /// GeoClue's shipped app entries (`gnome-datetime-panel`, `firefox`, ...) are not built in; they belong in
    /// the packaged configuration file, where an administrator can see and change them.
    public static let `default` = Configuration()

    /// GeoClue's default `[agent] whitelist`.
    public static let defaultAgentWhitelist = [
        "geoclue-demo-agent", "gnome-shell", "io.elementary.desktop.agent-geoclue2", "sm.puri.Phosh", "lipstick",
    ]

    /// The app entry for `desktopId`, if the configuration has one.
    public func app(_ desktopId: String) -> AppEntry? {
        apps[desktopId]
    }

    /// True when `desktopId` is configured with `system=true`; such a client does not make `InUse` true.
    public func isSystemApp(_ desktopId: String) -> Bool {
        apps[desktopId]?.system ?? false
    }

    /// True when `desktopId` is in the agent whitelist, so that `AddAgent` accepts it.
    public func isAgentAllowed(_ desktopId: String) -> Bool {
        agentWhitelist.contains(desktopId)
    }

    /// What the configuration says about `desktopId` starting for user `uid`, as GeoClue's
    /// `gclue_config_get_app_perm` decides it.
    public func permission(for desktopId: String, uid: UInt32) -> AppPermission {
        guard let entry = apps[desktopId] else { return .askAgent }
        return entry.allows(uid: uid) ? .allowed : .disallowed
    }
}

/// What an app entry decides for one client.
public enum AppPermission: Sendable, Equatable {
    /// `allowed=true` and the user is listed (or the list is empty): start without asking the agent.
    case allowed
    /// `allowed=false`, or `users=` does not list the user: refuse with `AccessDenied`.
    case disallowed
    /// The app has no entry: the normal agent flow decides.
    case askAgent
}

/// One app entry: a group named by desktop id, such as `[firefox]`.
///
/// GeoClue requires all three keys; a group that lacks one is refused.
public struct AppEntry: Sendable, Equatable {
    /// `allowed=`: true lets the app start without asking the agent; false refuses it.
    public var allowed: Bool
    /// `system=`: true when the app is part of the system, so that it does not make `InUse` true.
    public var system: Bool
    /// `users=`: the UIDs the entry applies to; empty means every user.
    public var users: [UInt32]

    /// Makes an entry.
    public init(allowed: Bool, system: Bool, users: [UInt32] = []) {
        self.allowed = allowed
        self.system = system
        self.users = users
    }

    /// True when the entry allows the app for `uid`: `allowed=true` and `users=` is empty or lists `uid`.
    public func allows(uid: UInt32) -> Bool {
        allowed && (users.isEmpty || users.contains(uid))
    }
}

/// `[static-source]`: a fixed location read from a file in GeoClue 2.7's `/etc/geolocation` format.
public struct StaticSourceConfig: Sendable, Equatable {
    /// `enable=`. Off by default, unlike GeoClue: a static location would otherwise override every real
    /// source (it is always available at full accuracy), so a stray `/etc/geolocation` would silently
    /// pin every client to it.
    public var enabled: Bool
    /// `path=` (a Whereabouts addition): the location file, absolute.
    public var path: String

    /// GeoClue's fixed location file.
    public static let defaultPath = "/etc/geolocation"

    /// Makes a static-source configuration.
    public init(enabled: Bool = false, path: String = StaticSourceConfig.defaultPath) {
        self.enabled = enabled
        self.path = path
    }
}

/// `[replay]`: plays back a recorded track as if it were live.
public struct ReplayConfig: Sendable, Equatable {
    /// `enable=`; needs a ``path``.
    public var enabled: Bool
    /// `path=`: the recorded track, absolute.
    public var path: String?
    /// `speed=`: playback speed relative to real time; finite and greater than zero.
    public var speed: Double

    /// Makes a replay configuration.
    public init(enabled: Bool = false, path: String? = nil, speed: Double = 1.0) {
        self.enabled = enabled
        self.path = path
        self.speed = speed
    }
}

/// `[gpsd]`: a client of gpsd's JSON protocol.
public struct GPSDConfig: Sendable, Equatable {
    /// `enable=`.
    public var enabled: Bool
    /// `host=`: gpsd's host name or address.
    public var host: String
    /// `port=`: gpsd's TCP port, 1...65535.
    public var port: UInt16

    /// Makes a gpsd configuration; the defaults are gpsd's own.
    public init(enabled: Bool = false, host: String = "localhost", port: UInt16 = 2947) {
        self.enabled = enabled
        self.host = host
        self.port = port
    }
}

/// `[network-nmea]`: NMEA 0183 sentences from a Unix socket (GeoClue 2.6's `nmea-socket=`), and, as our own
/// keys, from a serial device or pty (`device=`, `baud=`) and from a TCP server (`tcp-host=`, `tcp-port=`).
///
/// GeoClue also discovers NMEA services on the network with Avahi when no socket is given. Whereabouts does not,
/// so `enable=true` with no endpoint (GeoClue's shipped setting) gives the source nothing to read; the daemon
/// says so in its log.
public struct NMEASocketConfig: Sendable, Equatable {
    /// The line speeds `baud=` accepts.
    public static let baudRates: [UInt32] = [4800, 9600, 19200, 38400, 57600, 115200, 230400]

    /// `enable=`.
    public var enabled: Bool
    /// `nmea-socket=`: the Unix socket to read, absolute.
    public var socketPath: String?
    /// `device=`: a serial device or pty to read, absolute.
    public var devicePath: String?
    /// `baud=`: the serial line speed to set; nil leaves the device as it is.
    public var baudRate: UInt32?
    /// `tcp-host=`: a TCP server that sends NMEA.
    public var tcpHost: String?
    /// `tcp-port=`.
    public var tcpPort: UInt16?

    /// Makes an NMEA configuration.
    public init(enabled: Bool = false, socketPath: String? = nil) {
        self.enabled = enabled
        self.socketPath = socketPath
    }
}

/// `[compass]`: the headings of iio-sensor-proxy's compass on exact fixes, `enable=` as GeoClue reads it, and
/// our own `magnetic-model=`, the World Magnetic Model's coefficient file for the true heading.
public struct CompassConfig: Sendable, Equatable {
    /// `enable=`.
    public var enabled: Bool
    /// `magnetic-model=`: the `WMM.COF` file to read, absolute; nil for the built-in WMM2025
    /// (``MagneticModel/embeddedWMM2025``).
    public var magneticModelPath: String?

    /// Makes a compass configuration.
    public init(enabled: Bool = false, magneticModelPath: String? = nil) {
        self.enabled = enabled
        self.magneticModelPath = magneticModelPath
    }
}

/// `[authorisation]`: how apps are authorised.
public struct AuthorisationConfig: Sendable, Equatable {
    /// The default grants file.
    public static let defaultGrantsPath = "/var/lib/whereabouts/grants"

    /// `polkit=` (default true): ask polkit. With `polkit=false` the app entries, the users' stored decisions and
    /// their GeoClue agents decide, as in GeoClue: an app entry's `allowed=` first, then a stored decision, then
    /// the user's agent (asked at `Start`); an app none of them decides is `authorisedAlways`. Meant for machines
    /// without polkit and for the demo; a missing or failing polkit with `polkit=true` denies.
    public var usesPolkit = true
    /// `grants=`: where the users' decisions are kept.
    public var grantsPath = AuthorisationConfig.defaultGrantsPath

    public init(usesPolkit: Bool = true, grantsPath: String = AuthorisationConfig.defaultGrantsPath) {
        self.usesPolkit = usesPolkit
        self.grantsPath = grantsPath
    }
}
