import DBus
import WhereaboutsCore

/// A call of `org.freedesktop.GeoClue2.Manager` or `io.github.whereabouts1.Manager`, its arguments read and
/// checked. Every Manager call is parsed here, in one place, before anything is counted, authorised or changed;
/// the connection has already checked each call's signature against the interface.
enum ManagerCall: Equatable {
    /// `GetClient` (`reuse`) and `CreateClient`.
    case client(reuse: Bool)
    /// `DeleteClient(o client)`.
    case deleteClient(ObjectPath)
    /// `AddAgent(s id)`.
    case addAgent(id: String)
    /// `ListGrants(b all_users)`.
    case listGrants(allUsers: Bool)
    /// `RevokeGrant(u uid, s app)`, `app` not empty.
    case revokeGrant(uid: UInt32, app: String)
    /// `SetStaticLocation(d latitude, d longitude, d altitude, d accuracy)`, each in range.
    case setStaticLocation(StaticLocation)
    /// `ClearStaticLocation()`.
    case clearStaticLocation
    /// `Simulate(s track, a{sv} options)`.
    case simulate(SimulationRequest)
    /// `StopSimulation()`.
    case stopSimulation
    /// `GetHistory(b all_users, t since)`, `since` in Unix milliseconds.
    case getHistory(allUsers: Bool, since: WallTime)
    /// `ClearHistory(u uid)`.
    case clearHistory(uid: UInt32)

    /// The longest track `Simulate` takes, in bytes: 8 MiB.
    static let maximumTrackBytes = 8 << 20
    /// The fastest a simulation plays, in times real time.
    static let maximumSimulationSpeed = 1000.0

    /// True for the call answered before its handler returns (`DeleteClient`), which is not counted as held.
    var isAnsweredAtOnce: Bool {
        if case .deleteClient = self { true } else { false }
    }

    /// Reads a call of `method` with `arguments`; a bad argument is `InvalidArgs`, naming what is wrong.
    init(method: String, arguments: [DBusValue]) throws(DBusError) {
        switch method {
        case "GetClient": self = .client(reuse: true)
        case "CreateClient": self = .client(reuse: false)
        case "DeleteClient": self = .deleteClient(arguments[0].objectPath!)
        case "ListGrants": self = .listGrants(allUsers: arguments[0].bool!)
        case "RevokeGrant":
            let app = arguments[1].string!
            guard !app.isEmpty else { throw .invalidArgs("app must not be empty") }
            self = .revokeGrant(uid: arguments[0].uint32!, app: app)
        case "SetStaticLocation":
            let values = arguments.map { $0.double ?? .nan }
            do {
                self = .setStaticLocation(
                    try StaticLocation(
                        checkingLatitude: values[0], longitude: values[1], altitude: values[2], accuracy: values[3]))
            } catch {
                throw .invalidArgs("\(error)")
            }
        case "ClearStaticLocation": self = .clearStaticLocation
        case "Simulate": self = .simulate(try SimulationRequest(track: arguments[0].string!, options: arguments[1]))
        case "StopSimulation": self = .stopSimulation
        case "GetHistory":
            let milliseconds = arguments[1].uint64!
            guard milliseconds <= UInt64(Int64.max / 1000) else {
                throw .invalidArgs("since must be at most \(Int64.max / 1000) milliseconds")
            }
            self = .getHistory(
                allUsers: arguments[0].bool!, since: WallTime(microseconds: Int64(milliseconds) * 1000))
        case "ClearHistory": self = .clearHistory(uid: arguments[0].uint32!)
        default: self = .addAgent(id: arguments[0].string!)
        }
    }
}

/// What `Simulate` was asked to play, and how.
struct SimulationRequest: Equatable {
    /// The recorded track, NMEA or GPX text; parsed only once the caller is authorised (``GeoClueService/simulate(_:_:)``).
    var track: String
    /// Times real time, more than 0 and at most ``ManagerCall/maximumSimulationSpeed``.
    var speed = 1.0
    /// True to play the track again and again.
    var loops = false
    /// The file name for messages.
    var name = "track"

    /// Reads `Simulate`'s options: `speed` (d), `loop` (b), `name` (s).
    init(track: String, options: DBusValue) throws(DBusError) {
        self.track = track
        for (key, value) in options.stringKeyedEntries ?? [:] {
            switch (key, value) {
            case ("speed", .double(let wanted)): speed = wanted
            case ("loop", .boolean(let wanted)): loops = wanted
            case ("name", .string(let given)): name = given
            default:
                throw .invalidArgs(
                    "unknown or mistyped option '\(key)' (\(value.signature)); known: speed d, loop b, name s")
            }
        }
        guard track.utf8.count <= ManagerCall.maximumTrackBytes else {
            throw .invalidArgs(
                "the track is \(track.utf8.count) bytes long; at most \(ManagerCall.maximumTrackBytes) are accepted")
        }
        guard speed.isFinite, speed > 0, speed <= ManagerCall.maximumSimulationSpeed else {
            throw .invalidArgs("speed must be more than 0 and at most \(Int(ManagerCall.maximumSimulationSpeed))")
        }
    }
}
