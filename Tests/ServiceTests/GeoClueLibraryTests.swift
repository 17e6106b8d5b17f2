import DBus
import Foundation
import Loop
import TestSupport
import Testing
import Whereabouts

/// GeoClue 2.6 on a private bus with its agent registered and an NMEA receiver writing an epoch every 200 ms,
/// heading north from 48.1 N 11.5 E by 0.00001° an epoch.
@concurrent
func startGeoClue() async throws -> GeoClueHarness {
    let harness = try GeoClueHarness()
    do {
        try harness.start()
    } catch {
        harness.stop()
        throw error
    }
    harness.nmea.startEpochs(interval: .milliseconds(200)) { index, now in
        NMEAEpoch(time: now, latitude: GeoClueLibraryTests.latitude(index), longitude: 11.5)
    }
    return harness
}

@Suite("The Whereabouts library against GeoClue 2.6", .serialized)
@BusActor
struct GeoClueLibraryTests {
    nonisolated static func latitude(_ index: Int) -> Double { 48.1 + Double(index) * 0.00001 }

    /// The harness, its agent and a manager for the app `whereabouts-test`, which the configuration allows.
    func connect() async throws -> (GeoClueHarness, GeoClueTestAgent, LocationManager) {
        let harness = try await startGeoClue()
        let agent = try await GeoClueTestAgent.registered(on: harness.bus, as: GeoClueHarness.agentId)
        let manager = try LocationManager(desktopId: "whereabouts-test", address: harness.bus.address)
        return (harness, agent, manager)
    }

    @Test func aSingleLocationComesFromGeoClue() async throws {
        let (harness, agent, manager) = try await connect()
        defer {
            manager.close()
            agent.close()
            harness.stop()
        }
        #expect(try await manager.isWhereabouts() == false)
        let position = try await manager.requestLocation(RequestOptions(timeout: .seconds(20)))
        let written = harness.nmea.epochTimes.count
        #expect(position.longitude == 11.5, "\(position)")
        #expect((0..<max(written, 1)).contains { abs(position.latitude - Self.latitude($0)) < 1e-9 }, "\(position)")
        #expect(position.horizontalAccuracy >= 0)
        #expect(position.isStale == false && position.provider == nil)
    }

    @Test func theLocationsSequenceFollowsTheReceiverAtExactLevel() async throws {
        let (harness, agent, manager) = try await connect()
        defer {
            manager.close()
            agent.close()
            harness.stop()
        }
        var stream = manager.locations(MonitoringConfiguration(accuracy: .exact)).makeAsyncIterator()
        var latitudes: [Double] = []
        while latitudes.count < 4, let position = try await stream.next() {
            #expect(position.longitude == 11.5)
            latitudes.append(position.latitude)
        }
        #expect(latitudes.count == 4)
        #expect(latitudes == latitudes.sorted() && latitudes.first! < latitudes.last!, "\(latitudes)")
        #expect(harness.nmea.accepted >= 1, "GeoClue never connected to the NMEA socket:\n\(harness.log)")
    }

    @Test func availabilityFollowsTheAvailableAccuracyLevel() async throws {
        let (harness, agent, manager) = try await connect()
        defer {
            manager.close()
            agent.close()
            harness.stop()
        }
        var availability = manager.availability().makeAsyncIterator()
        #expect(try await availability.next() == true)
        let status = try await manager.status()
        #expect(status.isWhereabouts == false && status.availableLevel > 0, "\(status)")
    }

    @Test func whatOnlyWhereaboutsHasIsUnsupported() async throws {
        let (harness, agent, manager) = try await connect()
        defer {
            manager.close()
            agent.close()
            harness.stop()
        }
        func expectUnsupported(_ what: String, _ body: () async throws -> Void) async {
            do {
                try await body()
                Issue.record("\(what): expected unsupported, got success")
            } catch {
                guard case .unsupported? = error as? LocationError else {
                    Issue.record("\(what): expected unsupported, got \(error)")
                    return
                }
            }
        }
        await expectUnsupported("authorisationStatus") { _ = try await manager.authorisationStatus() }
        await expectUnsupported("requestAuthorisation") { _ = try await manager.requestAuthorisation(.whenInUse) }
        await expectUnsupported("grants") { _ = try await manager.grants() }
        await expectUnsupported("revokeGrant") { try await manager.revokeGrant(app: "whereabouts-test", uid: 0) }
        await expectUnsupported("lastLocation") { _ = try await manager.lastLocation() }
        await expectUnsupported("servicesEnabled") { _ = try await manager.servicesEnabled() }
        await expectUnsupported("maximumAge") {
            _ = try await manager.requestLocation(RequestOptions(maximumAge: .seconds(60)))
        }
        let status = try await manager.status()
        #expect(status.isWhereabouts == false && status.providers.isEmpty && status.activeApps.isEmpty)
    }
}
