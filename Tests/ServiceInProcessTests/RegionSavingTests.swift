import Foundation
import Glibc
import Loop
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsStorage

/// The regions a service keeps, written to a store on disk: a write that failed (a full or failing disk) is tried
/// again with the manual clock's time, with nothing else changing meanwhile.
@Suite @BusActor struct RegionSavingTests {
    @Test func aFailedWriteIsTriedAgainEvery10SecondsUntilItLands() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("regions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
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

        // An app's change is written a second later: the write fails.
        rig.advance(by: .seconds(1))
        store.flush()
        #expect(failures.lines.count == 1, "\(failures.lines)")
        // The disk recovers. Nothing else changes, and the user's file is written at the check 10 s after the save.
        try FileManager.default.removeItem(at: users)
        let file = users.appendingPathComponent("\(getuid())").path
        rig.advance(by: .seconds(9))
        store.flush()
        #expect(!FileManager.default.fileExists(atPath: file))
        rig.advance(by: .seconds(1))
        store.flush()
        #expect(FileManager.default.fileExists(atPath: file) && failures.lines.count == 1, "\(failures.lines)")
        let saved = store.load(now: rig.clock.wallNow) { line in Issue.record("\(line)") }
        #expect(saved.count == 1)
    }
}
