import Testing
import WhereaboutsCore

private typealias F = RegionFixtures

/// What one user can make the region monitor keep: bounded per app, per user over all the apps it claims, and in
/// all, each refused before anything is stored; and what a user's own file holds.
@Suite("Regions: limits per user and in all, and each user's file")
struct RegionLimitsTests {
    /// Adds `count` regions for `user`, `perApp` to each of as many apps as that takes.
    static func fill(_ regions: inout RegionMonitor, user: UInt32, count: Int, perApp: Int = Region.limitPerOwner)
        throws
    {
        for index in 0..<count {
            let owner = RegionOwner(user: user, app: "org.example.App\(index / perApp)")
            try regions.add(try F.region("r\(index)", north: Double(index % 500) * 10), for: owner, now: F.wall())
        }
    }

    @Test func aUserHasAShareOverAllTheAppsItClaims() throws {
        var regions = RegionMonitor()
        try Self.fill(&regions, user: 1000, count: Region.limitPerUser)
        let another = RegionOwner(user: 1000, app: "org.example.Another")
        #expect(throws: RegionLimitReached(owner: another, limit: .user)) {
            try regions.add(try F.region("x"), for: another, now: F.wall())
        }
        #expect(regions.count == Region.limitPerUser && regions.records(of: another).isEmpty)
        // Replacing one of the user's regions is no new region; another user is not held back.
        let first = RegionOwner(user: 1000, app: "org.example.App0")
        try regions.add(try F.region("r0", north: 5000), for: first, now: F.wall())
        try regions.add(try F.region("theirs"), for: RegionOwner(user: 1001, app: "org.example.App0"), now: F.wall())
        #expect(regions.count == Region.limitPerUser + 1)
    }

    @Test func theMonitorKeepsAtMostItsLimitInAll() throws {
        var regions = RegionMonitor()
        let users = Region.limitInAll / Region.limitPerUser
        for user in 0..<users { try Self.fill(&regions, user: UInt32(2000 + user), count: Region.limitPerUser) }
        #expect(regions.count == Region.limitInAll)
        let late = RegionOwner(user: 9999, app: "org.example.Late")
        #expect(throws: RegionLimitReached(owner: late, limit: .all)) {
            try regions.add(try F.region("x"), for: late, now: F.wall())
        }
        #expect(regions.count == Region.limitInAll && !regions.keepingUsers.contains(9999))
    }

    @Test func aUsersPendingEventsAreBoundedOverItsApps() throws {
        var regions = RegionMonitor()
        let owners = (0..<15).map { RegionOwner(user: 1000, app: "org.example.App\($0)") }
        for owner in owners { try regions.add(try F.region(), for: owner, now: F.wall()) }
        var dropped: [RegionOwner: Int] = [:]
        for step in 0..<90 {
            let events = regions.observe(
                F.fix(north: step % 2 == 0 ? 0 : 1000, at: Double(step)), coarsened: nil, approximate: F.precise)
            dropped.merge(regions.queue(events)) { $0 + $1 }
        }
        let kept = owners.map { regions.takePending(for: $0).count }.reduce(0, +)
        #expect(kept == RegionMonitor.pendingLimitPerUser, "\(kept) kept")
        #expect(dropped.values.reduce(0, +) == 15 * 90 - RegionMonitor.pendingLimitPerUser)
    }

    @Test func aUsersFileHoldsThatUserOnlyAndReadsBack() throws {
        var regions = RegionMonitor()
        try regions.add(try F.region("a"), for: F.maps, now: F.wall())
        try regions.add(try F.region("b"), for: RegionOwner(user: 1001, app: "org.example.Maps"), now: F.wall())
        _ = regions.queue(regions.observe(F.fix(at: 1), coarsened: nil, approximate: F.precise))
        let text = RegionFile.serialize(regions.records(ofUser: F.maps.user))
        #expect(!text.contains("\t1001\t") && !text.contains("\n1001\t") && text.contains("event\t1000\t"))
        let read = try RegionFile.parse(text, now: F.wall(2), user: F.maps.user)
        #expect(read.count == 1 && read.keepingUsers == [F.maps.user])
        #expect(RegionFile.serialize(read.records(ofUser: F.maps.user)) == text)
        // Another user's file may not carry it.
        #expect(throws: RegionFileError.self) { try RegionFile.parse(text, now: F.wall(2), user: 1001) }
        // Nothing kept: an empty file's worth, which the store removes.
        #expect(regions.records(ofUser: 4242).isEmpty)
    }

    /// The writer never writes what the reader refuses: a user at every limit, each id at its longest and escaped
    /// twice over (all backslashes), stays within the size a user's file is read up to, and reads back.
    @Test func aFullUserAtTheLongestIdsStaysWithinTheFilesReader() throws {
        var regions = RegionMonitor()
        let longest = String(repeating: "\\", count: Region.maximumIDBytes)
        let apps = (Region.limitPerUser + Region.limitPerOwner - 1) / Region.limitPerOwner
        for index in 0..<Region.limitPerUser {
            let app = String(repeating: "\\", count: Region.maximumIDBytes - 4) + String(1000 + index % apps)
            let id = String(longest.dropLast(5)) + String(10_000 + index)
            try regions.add(
                try F.region(id, north: Double(index % 40) * 1000), for: RegionOwner(user: 1000, app: app),
                now: F.wall())
        }
        for step in 0..<40 {
            _ = regions.queue(
                regions.observe(
                    F.fix(north: step % 2 == 0 ? -50_000 : 0, at: Double(step)), coarsened: nil, approximate: F.precise)
            )
        }
        let text = RegionFile.serialize(regions.records(ofUser: 1000))
        print("a full user's file at the longest ids: \(text.utf8.count) bytes")
        #expect(text.utf8.count <= 8 << 20)
        let read = try RegionFile.parse(text, now: F.wall(100), user: 1000)
        #expect(read.count == Region.limitPerUser)
    }
}
