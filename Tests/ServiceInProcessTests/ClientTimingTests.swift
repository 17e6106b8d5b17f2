import DBus
import Loop
import TestSupport
import Testing
import WhereaboutsCore

/// The client's timers, driven by the manual clock of a service in the test's process: each fires exactly at its
/// time, and not a nanosecond before. "Not yet" is read after a round trip on the client's connection, which the
/// service answers after anything it sent before.
@Suite @BusActor struct ClientTimingTests {
    static let ours = BusNames.Whereabouts.clientInterface
    static let geoClue = BusNames.GeoClue.clientInterface

    /// `GetClient`, with a `DesktopId` set.
    static func namedClient(_ app: GeoClueTestClient) async throws -> ObjectPath {
        let client = try await app.getClient()
        try await app.set(client, geoClue, "DesktopId", .string("timing"))
        return client
    }

    @Test func monitoringTimeoutSignalsExactlyWhenNoUpdateCame() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let app = try await rig.app()
        defer { app.close() }
        let client = try await Self.namedClient(app)
        try await app.set(client, Self.ours, "MonitoringTimeout", .uint32(300))
        _ = try await app.call(client, Self.geoClue, "Start")
        rig.deliver()
        _ = try await app.waitForUpdates(1)
        let timeouts = { app.signals.filter { $0.member == "UpdatesTimedOut" && $0.path == client }.count }

        rig.advance(by: .milliseconds(299))
        _ = try await app.get(client, Self.geoClue, "Active")
        #expect(timeouts() == 0)
        rig.advance(by: .milliseconds(1))
        try await app.waitFor("UpdatesTimedOut") { timeouts() == 1 }
        // Again after another timeout without updates; a fix puts the deadline back.
        rig.advance(by: .milliseconds(300))
        try await app.waitFor("a second UpdatesTimedOut") { timeouts() == 2 }
        rig.advance(by: .milliseconds(200))
        rig.deliver(northOf: 100)
        _ = try await app.waitForUpdates(2)
        rig.advance(by: .milliseconds(299))
        _ = try await app.get(client, Self.geoClue, "Active")
        #expect(timeouts() == 2)
        rig.advance(by: .milliseconds(1))
        try await app.waitFor("a third UpdatesTimedOut") { timeouts() == 3 }
    }

    @Test func aRequestFailsWithTimeoutExactlyAtItsTimeLimit() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let app = try await rig.app()
        defer { app.close() }
        let client = try await Self.namedClient(app)
        let outcome = CallOutcome()
        BusActor.task {
            do throws(DBusError) {
                _ = try await app.call(client, Self.ours, "RequestLocation", [.vardict(["timeout": .uint32(2000)])])
                outcome.answer = .success(())
            } catch {
                outcome.answer = .failure(error)
            }
        }
        try await rig.waitUntilDemanded()
        rig.advance(by: .milliseconds(1999))
        // The service answers the Get after anything it did before: the request is still waiting.
        _ = try await app.get(client, Self.geoClue, "Active")
        #expect(outcome.answer == nil)
        rig.advance(by: .milliseconds(1))
        try await app.waitFor("RequestLocation to be answered") { outcome.answer != nil }
        guard case .failure(let error) = outcome.answer else {
            Issue.record("RequestLocation answered with a location")
            return
        }
        #expect(error.name == "io.github.whereabouts1.Error.Timeout", "\(error)")
        try await app.waitFor("the providers to be released") { rig.demands.last == .some(nil) }
    }

    @Test func oldLocationsAreReleasedWhenTheirGraceEnds() async throws {
        let rig = try await InProcessService()
        defer { rig.stop() }
        let app = try await rig.app()
        defer { app.close() }
        let client = try await app.startedClient(desktopId: "timing")
        // A fix a second, each a kilometre on from the one before (a fix with the same time and provider would be
        // another report of the same measurement).
        for step in 0..<4 {
            if step > 0 { rig.advance(by: .seconds(1)) }
            rig.deliver(northOf: Double(step) * 1000)
            _ = try await app.waitForUpdates(step + 1)
        }
        let paths = app.locationUpdates.map(\.new)
        #expect(paths.map { $0.lastElement } == ["0", "1", "2", "3"])
        let readable = { (path: ObjectPath) async -> Bool in
            do throws(DBusError) {
                _ = try await app.getAll(path, GeoClueTestClient.locationInterface)
                return true
            } catch {
                return false
            }
        }
        // Location 0 stopped being the previous one when fix 2 came (at 2 s), Location 1 when fix 3 came (at 3 s):
        // each is readable for 5 s more. It is 3 s now.
        rig.advance(by: .milliseconds(3999))
        for path in paths { #expect(await readable(path), "\(path)") }
        rig.advance(by: .milliseconds(1))
        #expect(await readable(paths[0]) == false)
        #expect(await readable(paths[1]))
        rig.advance(by: .milliseconds(999))
        #expect(await readable(paths[1]))
        rig.advance(by: .milliseconds(1))
        #expect(await readable(paths[1]) == false)
        #expect(await readable(paths[2]))
        #expect(await readable(paths[3]))
        #expect(try await app.get(client, Self.geoClue, "Location") == .objectPath(paths[3]))
    }
}

/// How a call ended, once it has.
@BusActor
private final class CallOutcome {
    var answer: Result<Void, DBusError>?
}
