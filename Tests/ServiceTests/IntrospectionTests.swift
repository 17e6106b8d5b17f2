import DBus
import Foundation
import Loop
import TestSupport
import Testing

@Suite("Live introspection matches dbus/*.xml, end to end")
@BusActor
struct IntrospectionTests {
    static let standardInterfaces: Set<String> = [
        "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer",
    ]

    /// The interface `name` as the checked-in file `dbus/<name>.xml` declares it.
    func checkedIn(_ name: String) throws -> InterfaceSpec {
        let file = ProjectPaths.root.appendingPathComponent("dbus").appendingPathComponent("\(name).xml")
        let parsed = try InterfaceXML.parse(contentsOf: file)
        #expect(Array(parsed.interfaces.keys) == [name], "\(file.path) should declare exactly \(name)")
        return try #require(parsed.interfaces[name], "\(file.path) does not declare \(name)")
    }

    /// `Introspect` of `path` on the service, parsed.
    func introspect(_ app: GeoClueTestClient, _ path: ObjectPath) async throws -> (
        interfaces: [String: InterfaceSpec], children: [String]
    ) {
        let reply = try await app.call(path, "org.freedesktop.DBus.Introspectable", "Introspect")
        let xml = try #require(reply.first?.string, "Introspect of \(path) returned \(reply)")
        return try InterfaceXML.parse(xml)
    }

    /// Expects the object at `path` to carry the standard interfaces and exactly the GeoClue interface `name` and
    /// our own interface of the same object kind, each member for member equal to its checked-in file.
    func expectObject(
        _ app: GeoClueTestClient, _ path: ObjectPath, implements name: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let ours = "io.github.whereabouts1." + name.split(separator: ".").last!
        let live = try await introspect(app, path)
        #expect(
            Set(live.interfaces.keys) == IntrospectionTests.standardInterfaces.union([name, ours]),
            "\(path) exposes \(live.interfaces.keys.sorted())", sourceLocation: sourceLocation)
        for interface in [name, ours] {
            let expected = try checkedIn(interface)
            let actual = try #require(
                live.interfaces[interface], "\(path) lacks \(interface)", sourceLocation: sourceLocation)
            // Line by line first, for a readable difference; then exactly, order of members included.
            #expect(actual.memberLines == expected.memberLines, "\(path)", sourceLocation: sourceLocation)
            #expect(actual == expected, "\(path)", sourceLocation: sourceLocation)
        }
    }

    @Test func managerClientAndLocationMatchTheInterfaceFiles() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.startedClient()
        let updates = try await app.waitForUpdates(1)
        try await expectObject(app, GeoClueTestClient.managerPath, implements: GeoClueTestClient.managerInterface)
        try await expectObject(app, path, implements: GeoClueTestClient.clientInterface)
        try await expectObject(app, updates[0].new, implements: GeoClueTestClient.locationInterface)
        // The standard interfaces introspection lists answer too.
        _ = try await app.call(GeoClueTestClient.managerPath, "org.freedesktop.DBus.Peer", "Ping")
        let all = try await app.getAll(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface)
        #expect(Set(all.keys) == ["InUse", "AvailableAccuracyLevel"])
    }

    @Test func theTreeLeadsDownToTheManagerAndClients() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.startedClient()
        #expect(path.rawValue == "/org/freedesktop/GeoClue2/Client/1")
        let updates = try await app.waitForUpdates(1)
        #expect(updates[0].new.rawValue == "/org/freedesktop/GeoClue2/Client/1/Location/0")

        let steps: [(path: String, children: [String])] = [
            ("/", ["org"]),
            ("/org", ["freedesktop"]),
            ("/org/freedesktop", ["GeoClue2"]),
            ("/org/freedesktop/GeoClue2", ["Client", "Manager"]),
            ("/org/freedesktop/GeoClue2/Client", ["1"]),
        ]
        for step in steps {
            let node = try await introspect(app, ObjectPath(step.path)!)
            #expect(node.children == step.children, "children of \(step.path)")
            #expect(
                node.interfaces.isEmpty,
                "\(step.path) is only a node on the way, yet has \(node.interfaces.keys.sorted())")
        }
        // The static file may be re-announced meanwhile (see BadInputTests.waitForLocation), so the current
        // object need not be the first.
        let current = try #require(try await app.get(path, GeoClueTestClient.clientInterface, "Location").objectPath)
        let locations = try await introspect(app, path.appending("Location"))
        #expect(locations.children.contains(current.lastElement), "\(locations.children) lacks \(current)")
        #expect(locations.children.allSatisfy { UInt32($0) != nil } && locations.children.count <= 4)
        #expect(locations.interfaces.isEmpty)
        let clientNode = try await introspect(app, path)
        #expect(clientNode.children == ["Location"])
        #expect(clientNode.interfaces[GeoClueTestClient.clientInterface] != nil)
        let managerNode = try await introspect(app, GeoClueTestClient.managerPath)
        #expect(managerNode.children.isEmpty)
    }

    @Test func aDeletedClientIsAnEmptyNode() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let path = try await app.startedClient()
        let updates = try await app.waitForUpdates(1)
        _ = try await app.call(
            GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "DeleteClient", [.objectPath(path)])
        for gone in [path, updates[0].new] {
            let node = try await introspect(app, gone)
            #expect(node.interfaces.isEmpty, "\(gone) still has \(node.interfaces.keys.sorted())")
            #expect(node.children.isEmpty, "\(gone) still has children \(node.children)")
        }
        let clients = try await introspect(app, ObjectPath("/org/freedesktop/GeoClue2")!)
        #expect(clients.children == ["Manager"])
    }

    /// An `Introspect` with arguments is not one, as with GDBus and so GeoClue 2.6 (checked with `dbus-send`): the
    /// same errors, with the same texts, for an object and for a path with none.
    @Test func introspectWithArgumentsIsRefusedAsGeoClueRefusesIt() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        let introspectable = "org.freedesktop.DBus.Introspectable"
        await expectDBusError(
            DBusError.Name.unknownMethod,
            containing:
                "No such interface “\(introspectable)” on object at path /org/freedesktop/GeoClue2/Manager"
        ) {
            _ = try await app.call(GeoClueTestClient.managerPath, introspectable, "Introspect", [.string("x")])
        }
        await expectDBusError(DBusError.Name.unknownMethod, containing: "Object does not exist at path “/”") {
            _ = try await app.call(ObjectPath("/")!, introspectable, "Introspect", [.string("x")])
        }
        let root = try await introspect(app, ObjectPath("/")!)
        #expect(root.children == ["org"])
    }

    /// A user's `Introspect` calls beyond 100 a second are refused with `LimitsExceeded`, and another user's are
    /// still answered: listing its own thousands of clients costs a user's call a millisecond of the bus thread.
    @Test func introspectionIsLimitedPerUser() async throws {
        let harness = try await startedHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { app.close() }
        _ = try await app.getClient()
        let calls = (0..<1000).map { _ in
            Task { @BusActor () -> String in
                do {
                    _ = try await app.call(
                        GeoClueTestClient.managerPath, "org.freedesktop.DBus.Introspectable", "Introspect")
                    return "answered"
                } catch {
                    return (error as? DBusError)?.name ?? "\(error)"
                }
            }
        }
        var outcomes: [String: Int] = [:]
        for call in calls { outcomes[await call.value, default: 0] += 1 }
        #expect((outcomes["answered"] ?? 0) >= 100, "\(outcomes)")
        #expect((outcomes[DBusError.Name.limitsExceeded] ?? 0) >= 1, "\(outcomes)")
        #expect(outcomes.keys.allSatisfy { $0 == "answered" || $0 == DBusError.Name.limitsExceeded }, "\(outcomes)")
        let other = try harness.busctl(
            [
                "call", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                "org.freedesktop.DBus.Introspectable",
                "Introspect",
            ], asUser: "daemon")
        #expect(other.status == 0, "\(other.output)")
    }

}
