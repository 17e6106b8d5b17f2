import Foundation
import Synchronization
import Testing
import WhereaboutsCore
import WhereaboutsStorage

/// The regions kept on disk, one file per user: a user's change writes that user's file only, a user who keeps
/// nothing has none, a file that cannot be read costs its user only, and the one file of earlier versions is
/// moved into the users' files.
@Suite("The regions store: a file per user")
struct RegionStoreTests {
    static let now = WallTime(microseconds: 1_700_000_000_000_000)

    /// A folder holding a grants path for a store, removed afterwards by the caller.
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("regions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func region(_ id: String) throws -> Region {
        try Region.validated(id: id, latitude: 48, longitude: 11, radius: 200, options: [:], now: now)
    }

    static func monitor(_ owners: [RegionOwner]) throws -> RegionMonitor {
        var monitor = RegionMonitor()
        for owner in owners { try monitor.add(try region("home"), for: owner, now: now) }
        return monitor
    }

    @Test func eachUserHasAFileAndOneWithNothingHasNone() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { _ in }
        let alice = RegionOwner(user: 1000, app: "org.example.Maps")
        let bob = RegionOwner(user: 1001, app: "org.example.Maps")
        var monitor = try Self.monitor([alice, bob])
        store.save(monitor.takeChangedUsers().map { monitor.records(ofUser: $0) })
        store.flush()
        let users = folder.appendingPathComponent("regions.d")
        #expect(try FileManager.default.contentsOfDirectory(atPath: users.path).sorted() == ["1000", "1001"])
        let bobsFile = users.appendingPathComponent("1001")
        let bobsBefore = try FileManager.default.attributesOfItem(atPath: bobsFile.path)[.systemFileNumber] as? Int

        // Alice's change writes Alice's file alone: Bob's is the same file, not rewritten.
        try monitor.add(try Self.region("work"), for: alice, now: Self.now)
        #expect(monitor.changedUsers == [1000])
        store.save(monitor.takeChangedUsers().map { monitor.records(ofUser: $0) })
        store.flush()
        #expect(
            try FileManager.default.attributesOfItem(atPath: bobsFile.path)[.systemFileNumber] as? Int == bobsBefore)

        _ = monitor.remove("home", for: bob)
        store.save(monitor.takeChangedUsers().map { monitor.records(ofUser: $0) })
        store.flush()
        #expect(try FileManager.default.contentsOfDirectory(atPath: users.path) == ["1000"])
        let read = store.load(now: Self.now) { Issue.record("\($0)") }
        #expect(read.count == 2 && read.keepingUsers == [1000])
    }

    @Test func aFileThatCannotBeReadCostsItsUserOnly() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { _ in }
        var monitor = try Self.monitor([
            RegionOwner(user: 1000, app: "org.example.Maps"), RegionOwner(user: 1001, app: "org.example.Maps"),
        ])
        store.save(monitor.takeChangedUsers().map { monitor.records(ofUser: $0) })
        store.flush()
        try "# whereabouts regions 2\nnot a line\n".write(
            to: folder.appendingPathComponent("regions.d/1001"), atomically: true, encoding: .utf8)
        var lines: [String] = []
        let read = store.load(now: Self.now) { lines.append($0) }
        #expect(read.keepingUsers == [1000])
        #expect(lines.count == 1 && lines[0].contains("regions of user 1001") && lines[0].contains("moved it to"))
        // Moved out of the folder, which holds users' files only (the package's path unit watches it).
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("regions.d").path)
        #expect(names == ["1000"], "\(names)")
        let beside = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(beside.contains { $0.hasPrefix("regions-1001.corrupt-") }, "\(beside)")
    }

    /// A file that no longer holds what its user keeps (its regions expired while the daemon was down) comes back
    /// noted as changed, so that the first save removes it; a temporary file a crash left is removed at once: the
    /// folder is empty exactly when nothing is kept.
    @Test func filesThatNoLongerMatchAreWrittenAgainAndCrashLeftoversGo() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { _ in }
        var monitor = RegionMonitor()
        let brief = try Region.validated(
            id: "brief", latitude: 48, longitude: 11, radius: 200,
            options: ["expires": .uint64(UInt64(Self.now.seconds + 60))], now: Self.now)
        try monitor.add(brief, for: RegionOwner(user: 1000, app: "org.example.Maps"), now: Self.now)
        try monitor.add(try Self.region("home"), for: RegionOwner(user: 1001, app: "org.example.Maps"), now: Self.now)
        store.save(monitor.takeChangedUsers().map { monitor.records(ofUser: $0) })
        store.flush()
        let users = folder.appendingPathComponent("regions.d")
        try "left by a crash".write(to: users.appendingPathComponent("1001.tmp"), atomically: true, encoding: .utf8)

        var later = store.load(now: WallTime(microseconds: Self.now.microseconds + 120_000_000)) {
            Issue.record("\($0)")
        }
        #expect(later.count == 1 && later.changedUsers == [1000])
        #expect(try FileManager.default.contentsOfDirectory(atPath: users.path).sorted() == ["1000", "1001"])
        store.save(later.takeChangedUsers().map { later.records(ofUser: $0) })
        store.flush()
        #expect(try FileManager.default.contentsOfDirectory(atPath: users.path) == ["1001"])
        #expect(store.takeFailedUsers().isEmpty)
    }

    /// A user's file that cannot be written (here the folder is a file) is told, and its user kept for the
    /// service to save again; the earlier one-file store is then moved aside, never taken in twice, and its users
    /// come back to be written.
    @Test func aFailedWriteIsKeptForAnotherAndTheEarlierStoreIsReadOnce() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try "not a folder".write(to: folder.appendingPathComponent("regions.d"), atomically: true, encoding: .utf8)
        let monitor = try Self.monitor([RegionOwner(user: 1000, app: "org.example.Maps")])
        try RegionFile.serialize(monitor).write(
            to: folder.appendingPathComponent("regions"), atomically: true, encoding: .utf8)
        let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { _ in }
        var lines: [String] = []
        var read = store.load(now: Self.now) { lines.append($0) }
        #expect(read.count == 1 && read.changedUsers == [1000], "\(lines)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains("regions") && names.contains { $0.hasPrefix("regions.migrated-") }, "\(names)")
        let told = Mutex(0)
        store.whenWritesFail { told.withLock { $0 += 1 } }
        store.save(read.takeChangedUsers().map { read.records(ofUser: $0) })
        store.flush()
        #expect(told.withLock { $0 } == 1)
        #expect(store.takeFailedUsers() == [1000])
        #expect(store.load(now: Self.now) { _ in }.count == 0, "the earlier store was taken in again")
    }

    @Test func theEarlierOneFileStoreIsMovedIntoTheUsersFiles() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let monitor = try Self.monitor([
            RegionOwner(user: 1000, app: "org.example.Maps"), RegionOwner(user: 1001, app: "org.example.Weather"),
        ])
        try RegionFile.serialize(monitor).write(
            to: folder.appendingPathComponent("regions"), atomically: true, encoding: .utf8)
        let store = RegionStore(besideGrantsAt: folder.appendingPathComponent("grants").path) { _ in }
        var lines: [String] = []
        let read = store.load(now: Self.now) { lines.append($0) }
        #expect(read.count == 2 && read.keepingUsers == [1000, 1001])
        #expect(lines.count == 1 && lines[0].contains("moved 2 region(s) of 2 user(s)"), "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("regions").path))
        #expect(store.load(now: Self.now) { Issue.record("\($0)") }.count == 2)
    }
}
