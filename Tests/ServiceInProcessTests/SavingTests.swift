import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing
import WhereaboutsCore
import WhereaboutsStorage

/// What a service keeps on disk (the regions, the history of use): a write that failed (a full or failing disk) is
/// tried again with the manual clock's time, with nothing else changing meanwhile, and a write that landed leaves
/// nothing to do, so that an idle daemon is not woken.
@Suite @BusActor struct SavingTests {
    /// A folder for the grants and what lies beside them, removed by `body`'s end.
    private static func inFolder(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("saving-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder)
    }

    /// Writes what `store` was handed and runs what its writer told the service.
    private static func settle(_ rig: InProcessService, _ flush: () -> Void) async {
        flush()
        await rig.runQueuedWork()
    }

    /// Repairs the disk (removes the regular file standing where the users' `folder` goes), then holds that the
    /// user's file is written by the try 10 s after the last failure, not before, with `failures` still at `count`.
    private static func expectTheRetryLands(
        _ rig: InProcessService, _ flush: () -> Void, folder users: URL, failures: LogLines, count: Int
    ) throws {
        try FileManager.default.removeItem(at: users)
        let file = users.appendingPathComponent("\(getuid())").path
        rig.advance(by: .seconds(9))
        flush()
        #expect(!FileManager.default.fileExists(atPath: file))
        rig.advance(by: .seconds(1))
        flush()
        #expect(FileManager.default.fileExists(atPath: file) && failures.lines.count == count, "\(failures.lines)")
    }

    @Test func aFailedWriteIsTriedAgainEvery10SecondsUntilItLands() async throws {
        try await Self.inFolder { folder in
            // A regular file where the users' folder goes: every write fails, as on a failing disk, even for root.
            let users = folder.appendingPathComponent("regions.d")
            #expect(FileManager.default.createFile(atPath: users.path, contents: Data()))
            let failures = LogLines()
            let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { failure in
                failures.log(.error, failure)
            }
            let rig = try await InProcessService(regionStore: store)
            defer { rig.stop() }
            let (app, client) = try await RegionTimingTests.regionsClient(rig)
            defer { app.close() }
            try await RegionTimingTests.addRegion(app, client, "home")

            // An app's change is written a second later: the write fails, and the service is told.
            rig.advance(by: .seconds(1))
            await Self.settle(rig, store.flush)
            #expect(failures.lines.count == 1, "\(failures.lines)")
            // Nothing else changes: the user's file is tried again 10 s after the failure, and fails again.
            rig.advance(by: .seconds(9))
            await Self.settle(rig, store.flush)
            #expect(failures.lines.count == 1, "\(failures.lines)")
            rig.advance(by: .seconds(1))
            await Self.settle(rig, store.flush)
            #expect(failures.lines.count == 2, "\(failures.lines)")
            // The disk recovers, and the next try, 10 s after the second failure, lands.
            try Self.expectTheRetryLands(rig, store.flush, folder: users, failures: failures, count: 2)
            let saved = store.load(now: rig.clock.wallNow) { line in Issue.record("\(line)") }
            #expect(saved.count == 1)
        }
    }

    @Test func aSaveThatLandedLeavesNoTimerBehind() async throws {
        try await Self.inFolder { folder in
            let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { failure in
                Issue.record("\(failure)")
            }
            let rig = try await InProcessService(regionStore: store)
            defer { rig.stop() }
            let (app, client) = try await RegionTimingTests.regionsClient(rig)
            defer { app.close() }
            try await RegionTimingTests.addRegion(app, client, "home")
            rig.advance(by: .zero)
            let armed = rig.clock.armedTimers

            // The save due a second later is the one timer that goes; nothing is armed to look at the write after.
            rig.advance(by: .seconds(1))
            await Self.settle(rig, store.flush)
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("regions.d/\(getuid())").path))
            #expect(rig.clock.armedTimers == armed - 1)
        }
    }

    @Test func aHistoryWriteThatFailedIsWrittenWhole10SecondsLater() async throws {
        try await Self.inFolder { folder in
            let users = folder.appendingPathComponent("history.d")
            #expect(FileManager.default.createFile(atPath: users.path, contents: Data()))
            let failures = LogLines()
            let store = HistoryStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { failure in
                failures.log(.error, failure)
            }
            let rig = try await InProcessService(historyStore: store)
            defer { rig.stop() }
            let app = try await rig.app()
            defer { app.close() }
            let client = try await ClientTimingTests.namedClient(app)
            _ = try await app.call(client, ClientTimingTests.geoClue, "Start")
            rig.deliver()
            _ = try await app.waitForUpdates(1)

            // The app's use ends: its entry is written at once, and the write fails.
            _ = try await app.call(client, ClientTimingTests.geoClue, "Stop")
            await Self.settle(rig, store.flush)
            #expect(failures.lines.count == 1, "\(failures.lines)")
            try Self.expectTheRetryLands(rig, store.flush, folder: users, failures: failures, count: 1)
            let saved = store.load(now: rig.clock.wallNow) { line in Issue.record("\(line)") }
            #expect(
                saved.entries(ofUser: getuid(), since: WallTime(microseconds: 0), now: rig.clock.wallNow).count == 1)
        }
    }
}
