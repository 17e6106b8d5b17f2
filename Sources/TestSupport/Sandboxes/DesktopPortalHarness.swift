import Foundation
import Glibc
import TestBasics

/// The real `xdg-desktop-portal` (Debian's package, 1.16) on a private session bus of its own, taking a
/// ``PrivateBus`` as its system bus, where it asks `org.freedesktop.GeoClue2` for the location apps request
/// through its `org.freedesktop.portal.Location` interface. Nothing touches the machine's own buses.
///
/// It starts, in a folder of its own:
/// - a `dbus-daemon` for the session bus that lets every connection call and own anything and activates nothing
///   (so neither the document portal nor any backend starts);
/// - `xdg-permission-store`, keeping its tables under the folder (`XDG_DATA_HOME`), where the portal finds which
///   apps may have location (``allowLocation(for:accuracy:)``);
/// - `xdg-desktop-portal` in a cgroup on the path systemd gives the user's `xdg-desktop-portal.service`, whose unit
///   file says `Slice=session.slice`: `/user.slice/user-UID.slice/user@UID.service/session.slice/
///   xdg-desktop-portal.service`, UID being the test runner's (root: 0) (see ``portalCgroup``); or, with
///   ``Placement/loginSession``, where a session bus that `dbus-launch` or `dbus-run-session` started activates it:
///   in the user's login session scope, `/user.slice/user-UID.slice/session-NAME.scope`, outside any user unit.
///
/// The portal offers its Location interface only when some backend's `.portal` file claims
/// `org.freedesktop.impl.portal.Access`, whose dialog it shows for an app the permission store does not know. The
/// harness's only `.portal` file (read through `XDG_DESKTOP_PORTAL_DIR`) claims it for a name nobody owns, so no
/// dialog is ever shown: an app without a stored permission is answered at once with response 2 (failed), one
/// stored as `NONE` with 1 (denied). A host app (no `/.flatpak-info`) gets exact location without being asked.
///
/// What the portal does for an app it lets through (read from its source and seen here): GeoClue's `GetClient` on
/// the system bus (one client per portal connection, so every app's session shares it), `DesktopId`
/// `xdg-desktop-portal` whatever the app, `RequestedAccuracyLevel` the session's (exact unless the app asked for
/// less), lowered to the stored one, then `Start`; each `LocationUpdated` is relayed as the portal's own, with the
/// properties of GeoClue's Location object. It tells apps apart by `/proc/PID/root/.flatpak-info` of the process on
/// the connection, which needs only `[Application]` `name=` (see ``spawnApp(_:flatpakInfo:command:)``).
public final class DesktopPortalHarness: @unchecked Sendable {
    /// The portal's program.
    public static let portalExecutable = URL(fileURLWithPath: "/usr/libexec/xdg-desktop-portal")
    /// The permission store's program.
    public static let permissionStoreExecutable = URL(fileURLWithPath: "/usr/libexec/xdg-permission-store")
    /// The portal's bus name.
    public static let portalName = "org.freedesktop.portal.Desktop"
    /// The permission store's bus name.
    public static let permissionStoreName = "org.freedesktop.impl.portal.PermissionStore"
    /// The bus name the harness's `.portal` file gives the Access backend, which nothing owns.
    public static let absentBackendName = "org.freedesktop.impl.portal.desktop.whereaboutstest"
    /// The script that asks the Location portal for a location (`Tests/Clients/portal_client.py`).
    public static let clientScript = ProjectPaths.clients.appendingPathComponent("portal_client.py")

    /// The bus the portal takes as its system bus, where GeoClue is.
    public let systemBus: PrivateBus
    /// The folder holding the session bus's socket and config, the homes of the portal and the store, and logs.
    public let directory: URL
    /// The session bus address, for `DBUS_SESSION_BUS_ADDRESS`.
    public let sessionAddress: String
    /// The cgroup of the portal: the user's `xdg-desktop-portal.service` in `session.slice`, or a login session's
    /// scope (``Placement``).
    public let portalCgroup: UnitCgroup
    /// The portal process (its pid is the portal's: the cgroup launcher execs it).
    public let portal: ChildProcess
    private let sessionBus: ChildProcess
    private let permissionStore: ChildProcess
    /// Numbers for the apps' scopes, shared by every harness of the test process.
    private static let scopeNumbers = ScopeNumbers()

    /// Where the portal runs.
    public enum Placement: Sendable {
        /// In the user's `xdg-desktop-portal.service`, as the user's systemd manager starts it (`dbus-user-session`).
        case userUnit
        /// In a login session's scope, outside any user unit, as a session bus started by `dbus-launch` or
        /// `dbus-run-session` (Xfce and other desktops without `dbus-user-session`) activates it directly.
        case loginSession
    }

    /// Starts the session bus, the permission store and the portal (placed as `placement` says), and returns once
    /// the portal owns its name.
    ///
    /// - Throws: ``TestEnvironmentError`` when a program is missing (Debian's `xdg-desktop-portal` and
    ///   `bubblewrap` packages) or does not start; what has started is stopped.
    public init(systemBus: PrivateBus, placement: Placement = .userUnit) throws {
        for program in [Self.portalExecutable, Self.permissionStoreExecutable]
        where !FileManager.default.isExecutableFile(atPath: program.path) {
            throw TestEnvironmentError(
                "\(program.path) is not installed (Debian package xdg-desktop-portal); run the test command from the README, which installs it"
            )
        }
        _ = try Executables.find("bwrap")
        self.systemBus = systemBus
        directory = try TemporaryDirectory.make(prefix: "whereabouts-portal")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let socket = directory.appendingPathComponent("session_bus_socket").path
        sessionAddress = "unix:path=\(socket)"
        var started: [ChildProcess] = []
        var cgroup: UnitCgroup?
        do {
            try Self.writeFiles(in: directory, socket: socket)
            let bus = try ChildProcess(
                try Executables.find("dbus-daemon"),
                [
                    "--config-file=\(directory.appendingPathComponent("session.conf").path)", "--nofork",
                    "--nopidfile", "--print-address",
                ], logFile: directory.appendingPathComponent("session-bus.log"))
            started.append(bus)
            try Wait.until("the session bus to listen", timeout: 10) {
                guard bus.isRunning else { throw TestEnvironmentError("dbus-daemon exited:\n\(bus.log)") }
                return bus.log.contains("unix:path=")
            }
            let environment = Self.environment(directory: directory, session: sessionAddress, system: systemBus)
            let store = try ChildProcess(
                Self.permissionStoreExecutable, [], environment: environment,
                logFile: directory.appendingPathComponent("permission-store.log"))
            started.append(store)
            try Self.waitForName(Self.permissionStoreName, of: store, address: sessionAddress, in: directory)
            let portalCgroup: UnitCgroup
            switch placement {
            case .userUnit:
                portalCgroup = try UnitCgroup(
                    path: UnitCgroup.userUnitPath(
                        uid: getuid(), slice: "session.slice", unit: "xdg-desktop-portal.service"))
            case .loginSession:
                portalCgroup = try UnitCgroup(
                    path: "/user.slice/user-\(getuid()).slice/session-wb\(Self.scopeNumbers.next()).scope")
            }
            cgroup = portalCgroup
            let command = portalCgroup.launcher + [Self.portalExecutable.path, "--verbose"]
            let portal = try ChildProcess(
                URL(fileURLWithPath: command[0]), Array(command.dropFirst()), environment: environment,
                logFile: directory.appendingPathComponent("portal.log"))
            started.append(portal)
            try Self.waitForName(Self.portalName, of: portal, address: sessionAddress, in: directory)
            guard portalCgroup.holds(portal.pid) else {
                let placement = (try? String(contentsOfFile: "/proc/\(portal.pid)/cgroup", encoding: .utf8)) ?? "?"
                throw TestEnvironmentError("the portal is not in \(portalCgroup.path):\n\(placement)")
            }
            sessionBus = bus
            permissionStore = store
            self.portal = portal
            self.portalCgroup = portalCgroup
        } catch {
            for process in started.reversed() { process.stop(grace: 1) }
            cgroup?.remove()
            let logs = Self.logs(in: directory)
            try? FileManager.default.removeItem(at: directory)
            throw TestEnvironmentError("\(error)\n\(logs)")
        }
    }

    /// What the portal wrote (with `--verbose`: each session, the permission it found, GeoClue's client and the
    /// location data it relayed).
    public var portalLog: String { portal.log }

    /// Stores in the permission store that the app `appID` may have location at `accuracy` (`NONE`, `COUNTRY`,
    /// `CITY`, `NEIGHBORHOOD`, `STREET` or `EXACT`), as the portal's own dialog would: table `location`, id
    /// `location`, the accuracy and the time of last use (`0`). The portal then asks no backend.
    public func allowLocation(for appID: String, accuracy: String = "EXACT") throws {
        let result = try sessionBusctl([
            "call", Self.permissionStoreName, "/org/freedesktop/impl/portal/PermissionStore",
            "org.freedesktop.impl.portal.PermissionStore", "SetPermission", "sbssas", "location", "true", "location",
            appID, "2", accuracy, "0",
        ])
        guard result.status == 0 else { throw TestEnvironmentError("SetPermission failed:\n\(result.output)") }
    }

    /// Starts `command` as the Flatpak app `appID`: inside `bwrap` with `flatpakInfo` (by default
    /// `[Application]` `name=APPID`) bound at `/.flatpak-info`, and in a scope of its own,
    /// `app-flatpak-<escaped id>-<number>.scope` under the user manager's `app.slice`. Its environment names the
    /// session bus and the system bus (both folders are bound into the sandbox at their own paths).
    public func spawnApp(_ appID: String, flatpakInfo: String? = nil, command: [String]) throws -> SandboxedApp {
        let number = Self.scopeNumbers.next()
        let info = directory.appendingPathComponent("flatpak-info-\(number)")
        try (flatpakInfo ?? "[Application]\nname=\(appID)\n").write(to: info, atomically: true, encoding: .utf8)
        let scope = try UnitCgroup(
            path: UnitCgroup.userUnitPath(
                uid: getuid(), slice: "app.slice", unit: UnitCgroup.flatpakScopeName(appID: appID, number: number)))
        do {
            let arguments =
                scope.launcher + [try Executables.find("bwrap").path] + sandboxArguments(flatpakInfo: info) + command
            let process = try ChildProcess(
                URL(fileURLWithPath: arguments[0]), Array(arguments.dropFirst()),
                environment: Self.environment(directory: directory, session: sessionAddress, system: systemBus),
                logFile: directory.appendingPathComponent("app-\(number).log"))
            return SandboxedApp(appID: appID, scope: scope, process: process)
        } catch {
            scope.remove()
            throw error
        }
    }

    /// The command running `Tests/Clients/portal_client.py` against this portal in `mode` (`first` or `hold`),
    /// waiting up to `timeout` seconds for a location, asking for the portal's `accuracy` (0 to 5) when given.
    public func portalClientCommand(mode: String, timeout: Double = 20, accuracy: Int? = nil) -> [String] {
        ["/usr/bin/python3", Self.clientScript.path, sessionAddress, mode, String(timeout)]
            + (accuracy.map { [String($0)] } ?? [])
    }

    /// Runs `busctl --address=<session bus> ARGUMENTS` as root.
    public func sessionBusctl(_ arguments: [String]) throws -> CommandResult {
        try Unprivileged.run(
            [try Executables.find("busctl").path, "--address=\(sessionAddress)"] + arguments, asUser: nil,
            environment: ProcessInfo.processInfo.environment, in: directory, timeout: 20)
    }

    /// Stops the portal, the permission store and the session bus, and removes the portal's cgroup and the folder.
    public func stop() {
        portal.stop(grace: 5)
        permissionStore.stop(grace: 5)
        // dbus-daemon ignores SIGTERM; a throwaway bus has nothing to save.
        sessionBus.signal(SIGKILL)
        _ = try? sessionBus.wait(timeout: 5)
        portalCgroup.remove()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// bwrap's arguments for an app's sandbox, up to the command: it reaches both buses and the client scripts.
    private func sandboxArguments(flatpakInfo: URL) -> [String] {
        FlatpakSandbox.bwrapArguments(
            infoFile: flatpakInfo, shared: [directory, systemBus.directory],
            readOnly: [Self.clientScript.deletingLastPathComponent()])
    }

    /// The environment of the store, the portal and the apps: the two buses, homes under `directory`, no
    /// desktop and no display.
    private static func environment(directory: URL, session: String, system: PrivateBus) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["DISPLAY", "WAYLAND_DISPLAY", "XDG_CURRENT_DESKTOP", "XDG_SESSION_TYPE"] {
            environment[name] = nil
        }
        environment["DBUS_SESSION_BUS_ADDRESS"] = session
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = system.address
        environment["HOME"] = directory.appendingPathComponent("home").path
        environment["XDG_DATA_HOME"] = directory.appendingPathComponent("data").path
        environment["XDG_CONFIG_HOME"] = directory.appendingPathComponent("config").path
        environment["XDG_CACHE_HOME"] = directory.appendingPathComponent("cache").path
        environment["XDG_RUNTIME_DIR"] = directory.appendingPathComponent("runtime").path
        environment["XDG_DESKTOP_PORTAL_DIR"] = directory.appendingPathComponent("portals").path
        return environment
    }

    /// The session bus's config, the homes and the `.portal` file.
    private static func writeFiles(in directory: URL, socket: String) throws {
        for name in ["home", "data", "config", "cache", "runtime", "portals"] {
            let folder = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        }
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(to: directory.appendingPathComponent("session.conf"), atomically: true, encoding: .utf8)
        let portal = """
            [portal]
            DBusName=\(absentBackendName)
            Interfaces=org.freedesktop.impl.portal.Access;
            UseIn=whereabouts-test
            """
        try portal.write(
            to: directory.appendingPathComponent("portals/whereabouts-test.portal"), atomically: true, encoding: .utf8)
    }

    /// Waits until `process` owns `name` on the bus at `address`.
    private static func waitForName(_ name: String, of process: ChildProcess, address: String, in directory: URL)
        throws
    {
        let busctl = try Executables.find("busctl").path
        try Wait.until("\(name) to be owned", timeout: 20) {
            guard process.isRunning else { throw TestEnvironmentError("the owner of \(name) exited") }
            let result = try Unprivileged.run(
                [busctl, "--address=\(address)", "status", name], asUser: nil,
                environment: ProcessInfo.processInfo.environment, in: directory, timeout: 10)
            if result.status == 0 && result.output.contains("PID=\(process.pid)\n") { return true }
            usleep(40_000)
            return false
        }
    }

    /// The logs in `directory`, for a failure's message.
    private static func logs(in directory: URL) -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.sorted().map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "--- \(name):\n\(text)"
        }.joined(separator: "\n")
    }
}

/// The numbers of the apps' scopes: the test process's pid then a count, so that no two apps of any test process
/// share a scope.
private final class ScopeNumbers: @unchecked Sendable {
    private let lock = NSLock()
    private var count: UInt64 = 0

    /// The next number.
    func next() -> UInt64 {
        lock.withLock {
            count += 1
            return UInt64(getpid()) * 10_000 + count
        }
    }
}
