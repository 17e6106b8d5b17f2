import Foundation
import Glibc
import TestSupport
import Testing

/// The real `xdg-desktop-portal` between a sandboxed app and the daemon: the app, a Flatpak app as far as the
/// portal can tell (bwrap, `/.flatpak-info`, its `app-flatpak-…` scope), asks `org.freedesktop.portal.Location` on
/// a private session bus; the portal, in the user's `xdg-desktop-portal.service` cgroup, asks the daemon on the
/// private system bus and relays the location.
@Suite("Desktop portal: a sandboxed app's location through the real xdg-desktop-portal")
struct DesktopPortalTests {
    static let app = "org.example.App"
    static let managerInterface = "io.github.whereabouts1.Manager"

    @Test func locationReachesASandboxedAppThroughThePortal() async throws {
        try await onOwnThread {
            let daemon = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
            defer { daemon.stop() }
            try daemon.startDaemon()
            let portal = try DesktopPortalHarness(systemBus: daemon.bus)
            defer { portal.stop() }
            print("the portal (pid \(portal.portal.pid)) runs in \(portal.portalCgroup.path)")
            try portal.allowLocation(for: Self.app)
            let app = try portal.spawnApp(Self.app, command: portal.portalClientCommand(mode: "hold"))
            defer { app.stop() }
            let location = try app.waitForLine(startingWith: "location ")
            #expect(location == "location 48.8584 2.2945 10.0", "\(app.log)\n\(portal.portalLog)")
            #expect(app.scope.holds(app.process.pid), "\(app.scope.path)")
            #expect(portal.portalLog.contains("Getting location permissions for '\(Self.app)'"), "\(portal.portalLog)")
            // While the app holds its session, the daemon lists the app its client named itself: the portal names
            // every app's client alike.
            let active = try daemon.busctl([
                "get-property", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager", Self.managerInterface,
                "ActiveApps",
            ])
            print("ActiveApps while \(Self.app) holds a portal session: \(active.output)")
            #expect(active.output.trimmingCharacters(in: .whitespacesAndNewlines) == #"as 1 "xdg-desktop-portal""#)
            // The daemon knew the portal by its cgroup: its client is served as the portal's, verified.
            #expect(daemon.daemonLog.contains("('portal:xdg-desktop-portal', UID 0) started"), "\(daemon.daemonLog)")
            // A process outside any sandbox and outside the portal's unit that names the portal's id is served, as
            // GeoClue serves it, as that claim (which any process of the user could make for any id).
            let script = ProjectPaths.clients.appendingPathComponent("identity_client.py").path
            let claimant = try Unprivileged.run(
                ["/usr/bin/python3", script, daemon.bus.address, "xdg-desktop-portal", "identity", "locate"],
                asUser: nil, environment: daemon.bus.environment, in: daemon.directory)
            #expect(
                claimant.output == "identity claimed:xdg-desktop-portal hint -\nfix 48.858400 2.294500\n",
                "\(claimant.output)")
            // An app the permission store does not know would get the access dialog; the harness has no backend to
            // show it, so the portal answers at once that the request failed.
            let stranger = try portal.spawnApp(
                "org.example.Stranger", command: portal.portalClientCommand(mode: "first"))
            defer { stranger.stop() }
            #expect(try stranger.waitForExit() == 2, "\(stranger.log)")
            #expect(stranger.log.contains("refused 2"), "\(stranger.log)")
        }
    }

    /// A session bus started by `dbus-launch` or `dbus-run-session` (Xfce, or any machine without systemd's user
    /// manager) activates the portal directly, in the login session's scope rather than its own unit: GeoClue serves
    /// it, and so does the daemon, as the claim `xdg-desktop-portal` (never verified).
    @Test func thePortalOutsideItsUnitServesASandboxedApp() async throws {
        try await onOwnThread {
            let daemon = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
            defer { daemon.stop() }
            try daemon.startDaemon()
            let portal = try DesktopPortalHarness(systemBus: daemon.bus, placement: .loginSession)
            defer { portal.stop() }
            print("the portal (pid \(portal.portal.pid)) runs in \(portal.portalCgroup.path)")
            try portal.allowLocation(for: Self.app)
            let app = try portal.spawnApp(Self.app, command: portal.portalClientCommand(mode: "first"))
            defer { app.stop() }
            let location = try app.waitForLine(startingWith: "location ")
            #expect(location == "location 48.8584 2.2945 10.0", "\(app.log)\n\(portal.portalLog)\n\(daemon.daemonLog)")
            #expect(daemon.daemonLog.contains("('claimed:xdg-desktop-portal', UID 0) started"), "\(daemon.daemonLog)")
            #expect(!daemon.daemonLog.contains("portal:xdg-desktop-portal'"), "\(daemon.daemonLog)")
        }
    }
}
