import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// The bus messages one client's life costs, counted with a bus monitor for whereaboutsd (with a real polkitd) and
/// for GeoClue 2.6, each on a private bus of its own.
///
/// A life (`Tests/Clients/client_life.py`, run as `nobody` on a connection of its own): connecting, `CreateClient`,
/// `Set` of `DesktopId` and of `RequestedAccuracyLevel`, `Start`, the first `LocationUpdated`, `GetAll` of that
/// Location, `Stop`, `DeleteClient`, disconnecting. Everything on the bus from the client's `Hello` until the bus
/// falls quiet after it left is counted: the client's calls and what they set off between the service, the bus,
/// polkitd and logind. Every message is work for dbus-daemon, which matches each against every match rule, so each
/// one is paid by every process on the bus. Counts are of messages, not of time, and do not depend on timing.
@Suite("Bus messages per client, against GeoClue 2.6", .serialized)
struct BusMessageCountTests {
    static let script = ProjectPaths.clients.appendingPathComponent("client_life.py")
    /// The app of the lives; the rule says yes to *always* for it and every app whose id begins with it.
    static let app = PolkitLoadTests.app
    /// The most messages a typical life (a later client of an app: polkit's answer reused) may cost whereaboutsd
    /// without logind on the bus, and with it (one `GetSessionByPID` more). GeoClue 2.6's cost 48.
    static let typicalBound = 35
    static let typicalBoundWithLogind = 37
    /// The most messages the first client of an app may cost whereaboutsd: one polkit check more, of which polkitd's
    /// own lookups of the caller and the subject are 20 messages.
    static let firstOfAppBound = 57

    /// The messages of the lives of a run, in order: the service's first client, the first client of another app,
    /// and a second client of that app.
    struct Lives {
        var first: [BusMessage] = []
        var firstOfApp: [BusMessage] = []
        var later: [BusMessage] = []
        /// The unique name of each life's client.
        var clients: [String] = []
    }

    /// Runs one life as `nobody` (`mode` `life` or `life-extended`) and returns the client's unique name and what
    /// the bus carried meanwhile, after checking that it began with the client's `Hello` and that the client was
    /// served. `feed` runs while the client lives (GeoClue's receiver writes its fix then). The signals python-dbusmock
    /// sends for each call its logind mock answers are left out.
    static func recordLife(on bus: PrivateBus, app: String, mode: String = "life", feed: () throws -> Void = {}) throws
        -> (String, [BusMessage])
    {
        let monitor = BusMonitor(bus: bus)
        try monitor.start()
        defer { monitor.stop() }
        let client = try Unprivileged.spawn(
            ["/usr/bin/python3", script.path, bus.address, app, mode], environment: bus.environment, in: bus.directory)
        defer { client.stop() }
        try feed()
        try client.wait(timeout: 40)
        #expect(client.exitCode == 0, "\(client.log)")
        #expect(client.log.contains("located "), "\(client.log)")
        try monitor.settle()
        // logind's mock announces every call it answers; logind does not.
        let messages = monitor.stop().filter { $0.interface != "org.freedesktop.DBus.Mock" }
        let name = client.log.split(separator: "\n").first { $0.hasPrefix("name ") }.map { String($0.dropFirst(5)) }
        #expect(
            messages.first?.member == "Hello" && messages.first?.sender == name, "\(String(describing: messages.first))"
        )
        return (name ?? "?", messages)
    }

    /// `messages` counted by (sender role → destination role, type, label), one line each, for the log.
    static func breakdown(_ messages: [BusMessage], roles: [String: String]) -> String {
        func role(_ name: String?) -> String {
            guard let name else { return "*" }
            return roles[name] ?? (name == "org.freedesktop.DBus" ? "bus" : name)
        }
        var counts: [String: Int] = [:]
        for message in messages {
            let key = "\(role(message.sender)) → \(role(message.destination)) \(message.kind.rawValue) \(message.label)"
            counts[key, default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { "  \($0.value) × \($0.key)" }.joined(separator: "\n")
    }

    /// The roles of the connections on `bus`: those of the processes in `processes` by their pid, and the clients.
    static func roles(on bus: PrivateBus, processes: [pid_t: String], clients: [String]) throws -> [String: String] {
        var roles: [String: String] = [:]
        for (name, pid) in try BusMonitor.connections(on: bus) { roles[name] = processes[pid] ?? "pid \(pid)" }
        for name in clients { roles[name] = "client" }
        return roles
    }

    static func report(_ service: String, _ lives: Lives, roles: [String: String]) {
        print(
            """
            \(service): the service's first client, \(lives.first.count) messages:
            \(breakdown(lives.first, roles: roles))
            \(service): the first client of an app, \(lives.firstOfApp.count) messages:
            \(breakdown(lives.firstOfApp, roles: roles))
            \(service): a later client of that app, \(lives.later.count) messages:
            \(breakdown(lives.later, roles: roles))
            """)
    }

    /// whereaboutsd on a bus of its own with polkitd saying yes to *always* for nobody, and, when `logind` is true,
    /// logind's mock with every process in nobody's active session.
    final class Whereabouts {
        let bus: PrivateBus
        let polkit: PolkitHarness
        let harness: DaemonHarness
        private(set) var logind: LogindMock?

        init(logind withLogind: Bool) throws {
            bus = try PolkitHarness.makeBus(extraPolicy: BusMonitor.busPolicy + "\n" + LogindMock.busPolicy)
            polkit = try PolkitHarness(
                bus: bus,
                rules: ["10-test.rules": PolkitLoadTests.rule("YES", action: "io.github.whereabouts1.location-always")])
            harness = try DaemonHarness(
                config: staticConfig, files: ["geolocation": staticFile], polkit: true, bus: bus)
            if withLogind { try startLogind() }
            try harness.startDaemon()
        }

        /// Starts logind's mock, with a session `c1` of nobody, active, that every process is in.
        func startLogind() throws {
            let logind = try LogindMock(bus: bus)
            self.logind = logind
            try logind.addSession("c1", uid: 65534, user: "nobody", active: true)
            try logind.addMethod(
                "GetSessionByPID", inSignature: "u", outSignature: "o",
                code: "ret = dbus.ObjectPath('\(LogindMock.managerPath)/session/c1')")
        }

        /// The roles of the connections on the bus, the lives' clients among them.
        func roles(clients: [String]) throws -> [String: String] {
            var processes: [pid_t: String] = [:]
            if let pid = harness.daemon?.pid { processes[pid] = "whereaboutsd" }
            if let pid = polkit.process?.pid { processes[pid] = "polkitd" }
            if let pid = logind?.process.pid { processes[pid] = "logind" }
            return try BusMessageCountTests.roles(on: bus, processes: processes, clients: clients)
        }

        /// The three lives of ``Lives``, reported on standard output under `title`.
        func lives(_ title: String) throws -> Lives {
            var lives = Lives()
            let app = BusMessageCountTests.app
            for (index, app) in ["\(app).first", app, app].enumerated() {
                let (name, messages) = try recordLife(on: bus, app: app)
                lives.clients.append(name)
                switch index {
                case 0: lives.first = messages
                case 1: lives.firstOfApp = messages
                default: lives.later = messages
                }
            }
            report(title, lives, roles: try roles(clients: lives.clients))
            return lives
        }

        func stop() {
            harness.stop()
            logind?.stop()
            polkit.stop()
        }
    }

    /// GeoClue 2.6 with an agent of `nobody` registered, and its receiver writing one GGA sentence (one fix, one
    /// `LocationUpdated`) once GeoClue connects to it for a client. The app is not in its configuration, as most
    /// are not; GeoClue 2.6 then does not ask the agent.
    static func geoClueLives() throws -> Lives {
        let harness = try GeoClueHarness(
            config: GeoClueHarness.configuration(apps: [:]), bus: try PrivateBus(extraPolicy: BusMonitor.busPolicy))
        defer { harness.stop() }
        try harness.start()
        let agent = try Unprivileged.spawn(
            ["/usr/bin/python3", script.path, harness.bus.address, GeoClueHarness.agentId, "agent"],
            environment: harness.bus.environment, in: harness.directory)
        defer { agent.stop() }
        try Wait.until("the agent to register", timeout: 20) {
            guard agent.isRunning else { throw TestEnvironmentError("the agent exited:\n\(agent.log)") }
            return agent.log.contains("registered")
        }
        var lives = Lives()
        for (index, app) in ["\(app).first", app, app].enumerated() {
            let accepted = harness.nmea.accepted
            let (name, messages) = try recordLife(on: harness.bus, app: app) {
                try Wait.until("GeoClue to read the receiver", timeout: 20) { harness.nmea.accepted > accepted }
                let epoch = NMEAEpoch(time: NMEA.wallNow(), latitude: 48.8584, longitude: 2.2945)
                harness.nmea.write(epoch.sentences[0])
            }
            lives.clients.append(name)
            switch index {
            case 0: lives.first = messages
            case 1: lives.firstOfApp = messages
            default: lives.later = messages
            }
        }
        var processes: [pid_t: String] = [agent.pid: "agent"]
        if let pid = harness.process?.pid { processes[pid] = "geoclue" }
        report("GeoClue 2.6", lives, roles: try roles(on: harness.bus, processes: processes, clients: lives.clients))
        return lives
    }

    /// The signals `client` received in `messages`: member, and for `PropertiesChanged` the interface and the
    /// changed properties.
    static func signals(to client: String, in messages: [BusMessage]) -> [String] {
        messages.filter { $0.kind == .signal && $0.destination == client && $0.sender != "org.freedesktop.DBus" }.map {
            $0.member == "PropertiesChanged"
                ? "PropertiesChanged \($0.strings.first ?? "") \($0.changedProperties.joined(separator: ","))"
                : $0.member ?? ""
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aClientsLifeCostsFewerBusMessagesThanWithGeoClue() throws {
        let withoutLogind = try Whereabouts(logind: false)
        let ours = try withoutLogind.lives("whereaboutsd without logind")
        withoutLogind.stop()
        let withLogind = try Whereabouts(logind: true)
        let oursWithLogind = try withLogind.lives("whereaboutsd with logind")
        withLogind.stop()
        let geoClue = try Self.geoClueLives()
        #expect(ours.later.count <= Self.typicalBound, "\(ours.later.count) messages")
        #expect(oursWithLogind.later.count <= Self.typicalBoundWithLogind, "\(oursWithLogind.later.count) messages")
        #expect(ours.firstOfApp.count <= Self.firstOfAppBound, "\(ours.firstOfApp.count) messages")
        for count in [ours.later.count, oursWithLogind.later.count] {
            #expect(count < geoClue.later.count, "\(count) against GeoClue's \(geoClue.later.count)")
        }
    }

    /// What a GeoClue client (libgeoclue, the portal, browsers) follows comes in GeoClue's order: a client that starts
    /// with a fix at hand (the static source's) hears `LocationUpdated`, then one `PropertiesChanged` of `Active` and
    /// `Location`, as GeoClue 2.6 announces the changes of one main-loop turn together. The property changes of our
    /// own interfaces reach only a client that uses them.
    @Test(.timeLimit(.minutes(2)))
    func aGeoClueClientHearsWhatItFollowsAndOnlyOurClientsHearOurs() throws {
        let service = try Whereabouts(logind: false)
        defer { service.stop() }
        _ = try Self.recordLife(on: service.bus, app: Self.app)
        let (geoClueClient, typical) = try Self.recordLife(on: service.bus, app: Self.app)
        let client = "org.freedesktop.GeoClue2.Client"
        #expect(
            Self.signals(to: geoClueClient, in: typical) == [
                "PropertiesChanged \(client) DesktopId", "PropertiesChanged \(client) RequestedAccuracyLevel",
                "LocationUpdated", "PropertiesChanged \(client) Active,Location", "PropertiesChanged \(client) Active",
            ])
        let (ourClient, extended) = try Self.recordLife(on: service.bus, app: Self.app, mode: "life-extended")
        #expect(
            Self.signals(to: ourClient, in: extended) == [
                "PropertiesChanged \(client) DesktopId", "PropertiesChanged \(client) RequestedAccuracyLevel",
                "PropertiesChanged io.github.whereabouts1.Client Approximate,AuthorisationStatus",
                "LocationUpdated", "PropertiesChanged \(client) Active,Location", "PropertiesChanged \(client) Active",
            ])
    }

    /// With logind absent the daemon asks it once, not at every connection, and asks again once it is there.
    @Test(.timeLimit(.minutes(2)))
    func logindAbsentIsAskedOnceAndAgainWhenItAppears() throws {
        let service = try Whereabouts(logind: false)
        defer { service.stop() }
        func sessionLookups(_ messages: [BusMessage]) -> Int {
            messages.filter { $0.kind == .methodCall && $0.member == "GetSessionByPID" }.count
        }
        let (_, first) = try Self.recordLife(on: service.bus, app: Self.app)
        #expect(sessionLookups(first) == 1)
        let (_, later) = try Self.recordLife(on: service.bus, app: Self.app)
        #expect(sessionLookups(later) == 0)
        try service.startLogind()
        let (_, withLogind) = try Self.recordLife(on: service.bus, app: Self.app)
        #expect(sessionLookups(withLogind) == 1)
        #expect(
            withLogind.contains {
                $0.kind == .methodReturn && $0.answers == "org.freedesktop.login1.Manager.GetSessionByPID"
            })
    }

    /// In-place updates (a fix held back by `DistanceThreshold`) refresh GeoClue's Location interface for every
    /// client, and ours for a client that read it.
    @Test(.timeLimit(.minutes(2)))
    @BusActor
    func ourLocationInterfaceIsRefreshedInPlaceForAClientThatReadIt() async throws {
        let harness = try await startedHarness(
            config: replayConfig(speed: 4), files: ["track.nmea": nmeaTrack(count: 120)])
        defer { harness.stop() }
        let ours = "io.github.whereabouts1.Location"
        let geoClue = GeoClueTestClient.locationInterface
        var apps: [GeoClueTestClient] = []
        defer { apps.forEach { $0.close() } }
        for _ in 0..<2 {
            let app = try await GeoClueTestClient(bus: harness.bus)
            apps.append(app)
            let path = try await app.getClient()
            try await app.set(path, GeoClueTestClient.clientInterface, "DesktopId", .string("whereabouts-test"))
            try await app.set(path, GeoClueTestClient.clientInterface, "RequestedAccuracyLevel", .uint32(8))
            try await app.set(path, GeoClueTestClient.clientInterface, "DistanceThreshold", .uint32(100_000))
            _ = try await app.call(path, GeoClueTestClient.clientInterface, "Start")
        }
        let (geoClueOnly, reader) = (apps[0], apps[1])
        let readerLocation = try await reader.waitForUpdates(1)[0].new
        let geoClueOnlyLocation = try await geoClueOnly.waitForUpdates(1)[0].new
        let read = try await reader.getAll(readerLocation, ours)
        #expect(read["Latitude"]?.double != nil)
        func refreshes(_ app: GeoClueTestClient, _ path: ObjectPath, _ interface: String) -> Int {
            app.signals.filter {
                $0.member == "PropertiesChanged" && $0.path == path && $0.arguments().first?.string == interface
            }.count
        }
        try await reader.waitFor("our Location interface to be refreshed in place", timeout: .seconds(20)) {
            refreshes(reader, readerLocation, ours) >= 1
        }
        try await geoClueOnly.waitFor("GeoClue's to be refreshed in place", timeout: .seconds(20)) {
            refreshes(geoClueOnly, geoClueOnlyLocation, geoClue) >= 2
        }
        #expect(refreshes(reader, readerLocation, geoClue) >= 1)
        #expect(refreshes(geoClueOnly, geoClueOnlyLocation, ours) == 0)
        #expect(!geoClueOnly.signals.contains { $0.arguments().first?.string == "io.github.whereabouts1.Client" })
    }
}
