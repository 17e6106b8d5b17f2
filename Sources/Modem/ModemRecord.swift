import DBus
import WhereaboutsCore
import WhereaboutsProviders

/// ModemManager's `MMModemState` values that decide what a modem can do.
enum ModemState {
    /// `MM_MODEM_STATE_LOCKED`: waiting for the SIM's PIN; no Location interface yet.
    static let locked: Int32 = 2
    /// `MM_MODEM_STATE_ENABLED`: from here on (searching, registered, connected) the location sources work.
    static let enabled: Int32 = 6
}

/// What the client knows of one modem: its `org.freedesktop.ModemManager1.Modem` properties that matter, and its
/// `Modem.Location` interface while it has one.
struct ModemRecord {
    /// `State` (`MMModemState`).
    var state: Int32 = 0
    /// `AccessTechnologies`.
    var accessTechnologies = AccessTechnologies(rawValue: 0)
    /// The Location interface, nil while the modem has none (locked, or without location support).
    var location: LocationRecord?

    /// True from `enabled` on.
    var isEnabled: Bool { state >= ModemState.enabled }

    /// True when the modem can give `source` now: enabled, offering it, and not refused by polkit.
    func canDeliver(_ source: ModemLocationSources) -> Bool {
        guard isEnabled, let location else { return false }
        return location.capabilities.isSuperset(of: source) && !location.refused
    }

    /// `state` as `mmcli` names it.
    var stateName: String {
        switch state {
        case -1: "failed"
        case 1: "initializing"
        case 2: "locked"
        case 3: "disabled"
        case 4: "disabling"
        case 5: "enabling"
        case 6: "enabled"
        case 7: "searching"
        case 8: "registered"
        case 9: "disconnecting"
        case 10: "connecting"
        case 11: "connected"
        default: "unknown"
        }
    }
}

/// One modem's `org.freedesktop.ModemManager1.Modem.Location` interface, and what the client set up on it.
struct LocationRecord {
    /// `Capabilities`.
    var capabilities: ModemLocationSources = []
    /// `Enabled`.
    var enabled: ModemLocationSources = []
    /// `SignalsLocation`.
    var signals = false
    /// The sources this service turned on that were off before (and so turns off again when unneeded).
    var ours: ModemLocationSources = []
    /// This service turned `SignalsLocation` on while it was off (and so turns it off again when nothing is needed).
    var turnedSignalsOn = false
    /// A `Setup` call is on its way.
    var setupInFlight = false
    /// The last `Setup` that failed, by its sources and signalling: not asked again until what is needed changes.
    var failedSetup: (sources: ModemLocationSources, signals: Bool)?
    /// The last failure was polkit's refusal.
    var refused = false
    /// The GNSS refresh rate last set, seconds.
    var refreshRate: UInt32?
    /// A `SetGpsRefreshRate` call is on its way.
    var pacingInFlight = false
    /// The rate of the last `SetGpsRefreshRate` that failed: not asked again until what is needed or the modem's
    /// state changes.
    var failedRefreshRate: UInt32?
    /// The last value of each `Location` entry read, so that a repeat is not passed on twice.
    var lastValues: [UInt32: DBusValue] = [:]
    /// `SupportedAssistanceData` (`MMModemLocationAssistanceDataType`).
    var supportedAssistanceData: UInt32 = 0
    /// `AssistanceDataServers`: where the modem's predicted orbits can be downloaded, in order.
    var assistanceDataServers: [String] = []
    /// The receiver's assistance is being prepared (``ModemManagerClient/prepareReceiver(_:)``), by that
    /// preparation's number; `Setup` waits for it.
    var preparing: Int?
    /// The receiver was assisted since it was last off: the next `Setup` that turns it on goes ahead.
    var receiverPrepared = false
    /// `SetSuplServer` was called (whatever its answer).
    var suplServerSet = false
    /// The download time of the predicted-orbit file last injected (or refused by the modem): each file once.
    var injectedOrbitsDownloadTime: WallTime?
    /// Whether the modem took that file; nil before any was offered.
    var tookOrbits: Bool?

    /// Forgets the failed `Setup` and `SetGpsRefreshRate`, so that both are tried again.
    mutating func forgetFailures() {
        failedSetup = nil
        failedRefreshRate = nil
    }
}
