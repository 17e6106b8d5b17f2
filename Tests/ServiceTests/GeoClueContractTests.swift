import DBus
import Foundation
import Loop
import TestSupport
import Testing

@Suite("GeoClue2 contract, end to end")
@BusActor
struct GeoClueContractTests {
    let client = GeoClueTestClient.clientInterface
    let location = GeoClueTestClient.locationInterface
    let manager = GeoClueTestClient.managerInterface
    let managerPath = GeoClueTestClient.managerPath

    @Test func getClientStartAndReadTheLocation() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let path = try await app.startedClient()
        #expect(path.rawValue == "/org/freedesktop/GeoClue2/Client/1")
        let updates = try await app.waitForUpdates(1)
        #expect(updates[0].old == .root)
        #expect(updates[0].new.rawValue == "/org/freedesktop/GeoClue2/Client/1/Location/0")
        let values = try await app.getAll(updates[0].new, location)
        #expect(values["Latitude"] == .double(48.8584))
        #expect(values["Longitude"] == .double(2.2945))
        #expect(values["Accuracy"] == .double(10))
        #expect(values["Altitude"] == .double(35))
        #expect(values["Speed"] == .double(-1))
        #expect(values["Heading"] == .double(-1))
        #expect(values["Description"] == .string("Static location"))
        #expect(values["Timestamp"]?.fields?.count == 2)
        #expect(try await app.get(path, client, "Location") == .objectPath(updates[0].new))
        #expect(try await app.get(path, client, "Active") == .boolean(true))
        #expect(try await app.get(managerPath, manager, "InUse") == .boolean(true))
    }

    @Test func clientDefaultsMatchGeoClue() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let path = try await app.getClient()
        let values = try await app.getAll(path, client)
        #expect(values["DesktopId"] == .string(""))
        #expect(values["RequestedAccuracyLevel"] == .uint32(4))
        #expect(values["DistanceThreshold"] == .uint32(0))
        #expect(values["TimeThreshold"] == .uint32(0))
        #expect(values["Active"] == .boolean(false))
        #expect(values["Location"] == .objectPath(.root))
        let managerValues = try await app.getAll(managerPath, manager)
        #expect(managerValues == ["InUse": .boolean(false), "AvailableAccuracyLevel": .uint32(8)])
    }

    @Test func clientPathsAndDeleteClient() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        let other = try await service.client()
        defer {
            app.close()
            other.close()
        }
        let first = try await app.getClient()
        #expect(try await app.getClient() == first)
        let created = try await app.createClient()
        #expect(created != first)
        let others = try await other.getClient()
        _ = try await app.call(managerPath, manager, "DeleteClient", [.objectPath(others)])
        #expect(try await other.get(others, client, "Active") == .boolean(false))
        _ = try await app.call(
            managerPath, manager, "DeleteClient", [.objectPath(ObjectPath("/org/freedesktop/GeoClue2/Client/999")!)])
        _ = try await app.call(managerPath, manager, "DeleteClient", [.objectPath(first)])
        await expectDBusError(DBusError.Name.unknownMethod, containing: "Object does not exist at path") {
            _ = try await app.get(first, client, "Active")
        }
        _ = try await app.call(managerPath, manager, "DeleteClient", [.objectPath(created)])
        let fresh = try await app.getClient()
        #expect(fresh != first && fresh != created && fresh != others)
    }

    @Test func anotherConnectionIsDenied() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        let intruder = try await service.client()
        defer {
            app.close()
            intruder.close()
        }
        let path = try await app.startedClient()
        let updates = try await app.waitForUpdates(1)
        await expectDBusError(DBusError.Name.accessDenied, containing: "Access denied") {
            _ = try await intruder.get(path, client, "Active")
        }
        // GetAll leaves out each property the caller may not read, as GeoClue's (GDBus's) does: nothing.
        #expect(try await intruder.getAll(path, client).isEmpty)
        #expect(try await intruder.getAll(updates[0].new, location).isEmpty)
        await expectDBusError(DBusError.Name.accessDenied) {
            try await intruder.set(path, client, "DesktopId", .string("x"))
        }
        await expectDBusError(DBusError.Name.accessDenied) { _ = try await intruder.call(path, client, "Stop") }
        await expectDBusError(DBusError.Name.accessDenied) {
            _ = try await intruder.get(updates[0].new, location, "Latitude")
        }
        #expect(try await app.get(path, client, "Active") == .boolean(true))
    }

    @Test func clientsAreDeletedWhenTheirConnectionGoesAway() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        let path = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        let observer = try await service.client()
        defer { observer.close() }
        #expect(try await observer.get(managerPath, manager, "InUse") == .boolean(true))
        app.close()
        try await observer.waitFor("InUse to drop") { observer.signals.contains { $0.member == "PropertiesChanged" } }
        #expect(try await observer.get(managerPath, manager, "InUse") == .boolean(false))
        await expectDBusError(DBusError.Name.unknownMethod, containing: "Object does not exist") {
            _ = try await observer.get(path, client, "Active")
        }
    }

    @Test func startErrorsMatchGeoClue() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let path = try await app.getClient()
        await expectDBusError(DBusError.Name.accessDenied, containing: "'DesktopId' property must be set") {
            _ = try await app.call(path, client, "Start")
        }
        #expect(try await app.get(path, client, "Active") == .boolean(false))
        try await app.set(path, client, "DesktopId", .string("denied-app"))
        await expectDBusError(
            DBusError.Name.accessDenied, containing: "'denied-app' disallowed by configuration for UID"
        ) {
            _ = try await app.call(path, client, "Start")
        }
        try await app.set(path, client, "DesktopId", .string("uid4242-app"))
        await expectDBusError(DBusError.Name.accessDenied, containing: "disallowed by configuration") {
            _ = try await app.call(path, client, "Start")
        }
        try await app.set(path, client, "DesktopId", .string(""))
        _ = try await app.call(path, client, "Start")
        _ = try await app.call(path, client, "Start")
        #expect(try await app.get(path, client, "Active") == .boolean(true))
        _ = try await app.call(path, client, "Stop")
        _ = try await app.call(path, client, "Stop")
        #expect(try await app.get(path, client, "Active") == .boolean(false))
        #expect(try await app.get(path, client, "Location") != .objectPath(.root))
    }

    @Test func propertyAndMethodErrorsMatchGeoClue() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        let path = try await app.getClient()
        await expectDBusError(DBusError.Name.invalidArgs, containing: "Property “InUse” is not writable") {
            try await app.set(managerPath, manager, "InUse", .boolean(true))
        }
        await expectDBusError(DBusError.Name.invalidArgs, containing: "Property “Active” is not writable") {
            try await app.set(path, client, "Active", .boolean(true))
        }
        await expectDBusError(DBusError.Name.invalidArgs, containing: "Expected type “u” but got “s”") {
            try await app.set(path, client, "RequestedAccuracyLevel", .string("8"))
        }
        await expectDBusError(DBusError.Name.invalidArgs, containing: "No such property “NoSuchProp”") {
            _ = try await app.get(path, client, "NoSuchProp")
        }
        await expectDBusError(DBusError.Name.unknownMethod, containing: "No such method “Frobnicate”") {
            _ = try await app.call(path, client, "Frobnicate")
        }
        await expectDBusError(DBusError.Name.accessDenied, containing: "not-an-agent not allowed to act as agent") {
            _ = try await app.call(managerPath, manager, "AddAgent", [.string("not-an-agent")])
        }
        await expectDBusError(DBusError.Name.invalidArgs) {
            _ = try await app.call(managerPath, manager, "DeleteClient", [.string("not a path")])
        }
        for level: UInt32 in [0, 2, 3, 7, 9, 100, .max] {
            try await app.set(path, client, "RequestedAccuracyLevel", .uint32(level))
            #expect(try await app.get(path, client, "RequestedAccuracyLevel") == .uint32(level))
        }
        try await app.set(path, client, "DistanceThreshold", .uint32(.max))
        try await app.set(path, client, "TimeThreshold", .uint32(.max))
        let huge = String(repeating: "x", count: 1 << 20)
        await expectDBusError(DBusError.Name.invalidArgs, containing: "DesktopId is 1048576 bytes long") {
            try await app.set(path, client, "DesktopId", .string(huge))
        }
        #expect(try await app.get(path, client, "DesktopId") == .string(""))
        // The daemon keeps serving everyone.
        let other = try await service.client()
        defer { other.close() }
        _ = try await other.startedClient()
        _ = try await other.waitForUpdates(1)
    }

    @Test func aThirdConnectionSeesNoCoordinates() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let eavesdropper = try await service.client()
        defer { eavesdropper.close() }
        let app = try await service.client()
        defer { app.close() }
        let path = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        try await app.set(path, client, "DistanceThreshold", .uint32(1000))
        try await app.set(path, client, "DesktopId", .string("renamed"))
        _ = try await app.call(path, client, "Stop")
        // A call through the daemon orders everything it emitted before the reply.
        _ = try await eavesdropper.get(managerPath, manager, "InUse")
        #expect(eavesdropper.locationUpdates.isEmpty)
        for message in eavesdropper.signals {
            #expect(
                message.path?.rawValue.hasPrefix("/org/freedesktop/GeoClue2/Client") != true,
                "overheard \(message.member ?? "")")
        }
        #expect(app.signals.contains { $0.member == "PropertiesChanged" && $0.path == path })
    }

    /// The level an app asks chooses its providers; nothing the user chose limits this one, so it is served the
    /// fix the providers have, as GeoClue serves its level's sources' fixes.
    @Test func aCoarseLevelIsServedTheFixTheProvidersHave() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        _ = try await app.startedClient(level: 4)
        let updates = try await app.waitForUpdates(1)
        let values = try await app.getAll(updates[0].new, location)
        #expect(values["Accuracy"] == .double(10))
        #expect(values["Latitude"] == .double(48.8584))
        #expect(values["Altitude"] == .double(35))
    }

    /// busctl as root, who administers the service, sees the Manager and every client, as with GeoClue; as another
    /// user (`nobody`), only the Manager (Introspect shows a connection its own objects only).
    @Test func busctlSeesTheObjectTree() async throws {
        let service = try StaticService()
        defer { service.stop() }
        let app = try await service.client()
        defer { app.close() }
        _ = try await app.startedClient()
        _ = try await app.waitForUpdates(1)
        let tree = try service.harness.busctl(["tree", "org.freedesktop.GeoClue2"])
        #expect(tree.status == 0)
        #expect(tree.output.contains("/org/freedesktop/GeoClue2/Manager"))
        #expect(tree.output.contains("/org/freedesktop/GeoClue2/Client/1"), "\(tree.output)")
        let stranger = try service.harness.busctl(["tree", "org.freedesktop.GeoClue2"], asUser: "nobody")
        #expect(stranger.status == 0 && stranger.output.contains("/org/freedesktop/GeoClue2/Manager"))
        #expect(!stranger.output.contains("/org/freedesktop/GeoClue2/Client"), "\(stranger.output)")
        let level = try service.harness.busctl([
            "get-property", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
            "org.freedesktop.GeoClue2.Manager", "AvailableAccuracyLevel",
        ])
        #expect(level.output.trimmingCharacters(in: .whitespacesAndNewlines) == "u 8")
        let introspection = try service.harness.busctl([
            "introspect", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
        ])
        #expect(introspection.output.contains(".GetClient"))
        let unprivileged = try service.harness.busctl(
            [
                "call", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                "org.freedesktop.GeoClue2.Manager", "CreateClient",
            ],
            asUser: "nobody")
        #expect(unprivileged.status == 0, "\(unprivileged.output)")
    }
}
