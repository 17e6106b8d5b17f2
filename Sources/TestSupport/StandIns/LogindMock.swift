import Foundation
import Glibc
import TestBasics

/// python-dbusmock's logind template (`python3 -m dbusmock --template logind`) as `org.freedesktop.login1` on a
/// ``PrivateBus``, for the login-session tests.
///
/// The template has sessions, users and seats, but no `GetSessionByPID`: ``mapProcesses(_:)`` adds it, through
/// the mock's `org.freedesktop.DBus.Mock.AddMethod`, answering for the processes it is given and failing with
/// logind's `NoSessionForPID` for any other. The template's `GetUser` fails on its own `u` argument, so it is
/// replaced by one that answers as logind does (`NoSuchUser` for a user without an object). ``setActive(_:_:)`` changes a session's `Active` with
/// `UpdateProperties`, which emits `PropertiesChanged` as logind does.
///
/// The bus must let root own `org.freedesktop.login1` and everyone call it: create it with
/// `PrivateBus(extraPolicy: LogindMock.busPolicy)`.
public final class LogindMock: BusServiceMock, @unchecked Sendable {
    public static let busName = "org.freedesktop.login1"
    public static let managerPath = "/org/freedesktop/login1"
    static let mockInterface = "org.freedesktop.DBus.Mock"

    /// Bus policy letting the mock own logind's name and everyone call it, as logind's own policy file does.
    public static let busPolicy = BusStandIn.policy(owning: busName)

    /// The stand-in serving the mock's bus name.
    public let standIn: BusStandIn

    /// Starts the mock and returns once it owns `org.freedesktop.login1`.
    public init(bus: PrivateBus) throws {
        standIn = try BusStandIn.dbusmock(
            bus: bus, busName: Self.busName, label: "the logind mock", template: "logind", logName: "logind-mock")
        let getUser = """
            path = '\(Self.managerPath)/user/%d' % args[0]
            if path not in objects:
                raise dbus.exceptions.DBusException('User ID %d is not logged in or lingering' % args[0], name='org.freedesktop.login1.NoSuchUser')
            ret = dbus.ObjectPath(path)
            """
        try addMethod("GetUser", inSignature: "u", outSignature: "o", code: getUser)
    }

    /// Adds session `id` of `uid` (named `user`) on seat0, active or not, and returns its object path.
    @discardableResult
    public func addSession(_ id: String, uid: UInt32, user: String, active: Bool) throws -> String {
        try standIn.call(
            Self.managerPath, Self.mockInterface, "AddSession",
            ["ssusb", id, "seat0", String(uid), user, String(active)])
        return "\(Self.managerPath)/session/\(id)"
    }

    /// Makes `Manager.GetSessionByPID` answer with the session id given for each process; any other process
    /// is in no session (`org.freedesktop.login1.NoSessionForPID`).
    public func mapProcesses(_ sessions: [pid_t: String]) throws {
        let entries = sessions.map { "\($0.key): '\(Self.managerPath)/session/\($0.value)'" }.joined(separator: ", ")
        let code = """
            sessions = {\(entries)}
            if args[0] not in sessions:
                raise dbus.exceptions.DBusException('PID %d does not belong to any known session' % args[0], name='org.freedesktop.login1.NoSessionForPID')
            ret = dbus.ObjectPath(sessions[args[0]])
            """
        try addMethod("GetSessionByPID", inSignature: "u", outSignature: "o", code: code)
    }

    /// Adds (or replaces) a method of `org.freedesktop.login1.Manager` running the Python `code`.
    public func addMethod(_ name: String, inSignature: String, outSignature: String, code: String) throws {
        try standIn.call(
            Self.managerPath, Self.mockInterface, "AddMethod",
            ["sssss", "org.freedesktop.login1.Manager", name, inSignature, outSignature, code])
    }

    /// Sets session `id`'s `Active`, emitting `PropertiesChanged`.
    public func setActive(_ id: String, _ active: Bool) throws {
        try standIn.call(
            "\(Self.managerPath)/session/\(id)", Self.mockInterface, "UpdateProperties",
            ["sa{sv}", "org.freedesktop.login1.Session", "1", "Active", "b", String(active)])
    }

    deinit { stop() }
}
