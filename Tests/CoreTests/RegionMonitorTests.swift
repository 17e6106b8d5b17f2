import Testing
import WhereaboutsCore

private typealias F = RegionFixtures

/// A monitor with `regions` of ``RegionFixtures/maps`` added at ``RegionFixtures/wall(_:)`` 0.
private func monitor(_ regions: Region...) throws -> RegionMonitor {
    var monitor = RegionMonitor()
    for region in regions { try monitor.add(region, for: F.maps, now: F.wall()) }
    return monitor
}

extension RegionMonitor {
    /// Observes a fix for precise owners only.
    fileprivate mutating func observe(_ fix: RegionFix) -> [RegionEvent] {
        observe(fix, coarsened: nil, approximate: F.precise)
    }

    /// The states of `owner`'s regions by id.
    fileprivate func states(of owner: RegionOwner = F.maps) -> [String: RegionState] {
        Dictionary(uniqueKeysWithValues: records(of: owner).map { ($0.region.id, $0.state) })
    }
}

@Suite("Regions: entering, leaving and dwelling")
struct RegionTransitionTests {
    @Test func onlyTheUsersWhoseKeepingChangedAreNoted() throws {
        var regions = try monitor(try F.region())
        #expect(regions.takeChangedUsers() == [F.maps.user])
        _ = regions.observe(F.fix(north: 50, at: 10))
        #expect(regions.takeChangedUsers() == [F.maps.user])
        _ = regions.observe(F.fix(north: 0, at: 20))
        _ = regions.observe(F.fix(north: 10, at: 30))
        #expect(regions.changedUsers.isEmpty)
        #expect(regions.takePending(for: F.maps).isEmpty && regions.changedUsers.isEmpty)
        let event = regions.observe(F.fix(north: 1000, at: 40))
        _ = regions.takeChangedUsers()
        _ = regions.queue(event)
        #expect(regions.takeChangedUsers() == [F.maps.user])
        #expect(regions.takePending(for: F.maps).count == 1 && regions.takeChangedUsers() == [F.maps.user])
        // Another user's change is that user's alone.
        let other = RegionOwner(user: F.maps.user + 1, app: F.maps.app)
        try regions.add(try F.region("theirs"), for: other, now: F.wall())
        #expect(regions.takeChangedUsers() == [other.user])
    }

    @Test func aFixInsideEntersAndIsReported() throws {
        var regions = try monitor(try F.region())
        #expect(regions.records(of: F.maps).first?.state == .unknown)
        #expect(regions.records(of: F.maps).first?.since == nil)
        let fix = F.fix(north: 50, at: 10)
        let events = regions.observe(fix)
        #expect(events.map(\.state) == [.inside])
        #expect(events.first?.fix == fix && events.first?.timestamp == F.wall(10) && events.first?.id == "home")
        #expect(events.first?.owner == F.maps)
        #expect(regions.records(of: F.maps).first?.state == .inside)
        #expect(regions.records(of: F.maps).first?.since == F.wall(10))
        #expect(regions.observe(F.fix(north: 0, at: 20)).isEmpty)
        #expect(regions.observe(F.fix(north: 1000, at: 30)).map(\.state) == [.outside])
        #expect(regions.records(of: F.maps).first?.since == F.wall(30))
    }

    @Test func aFixWanderingOnTheBoundaryDoesNotFlap() throws {
        var regions = try monitor(try F.region(radius: 200))
        #expect(regions.observe(F.fix(north: 0, accuracy: 100, at: 0)).map(\.state) == [.inside])
        for (step, north) in [180.0, 220, 200, 190, 215, 205, 185, 210, -200, -220, -180].enumerated() {
            let probability = RegionRule.probabilityInside(distance: abs(north), radius: 200, accuracy: 100)
            #expect(probability > RegionRule.exitProbability && probability < RegionRule.entryProbability)
            #expect(regions.observe(F.fix(north: north, accuracy: 100, at: Double(step + 1))).isEmpty)
        }
        #expect(regions.states() == ["home": .inside])
        #expect(regions.observe(F.fix(north: 400, accuracy: 100, at: 20)).map(\.state) == [.outside])
        // Coming back to the boundary from outside does not enter either.
        #expect(regions.observe(F.fix(north: 190, accuracy: 100, at: 21)).isEmpty)
        #expect(regions.observe(F.fix(north: 20, accuracy: 100, at: 23)).map(\.state) == [.inside])
    }

    @Test func aFixCoarserThanTwiceTheRadiusDecidesNothing() throws {
        var regions = try monitor(try F.region(radius: 200))
        #expect(regions.observe(F.fix(north: 5000, accuracy: 401, at: 0)).isEmpty)
        #expect(regions.states() == ["home": .unknown])
        #expect(regions.observe(F.fix(north: 5000, accuracy: 400, at: 1)).map(\.state) == [.outside])
        #expect(regions.observe(F.fix(north: 0, accuracy: 401, at: 2)).isEmpty)
        #expect(regions.states() == ["home": .outside])
    }

    @Test func theFirstDecisionIsReportedEvenWithNotificationsOff() throws {
        let quiet: [String: RegionOptionValue] = ["notify-entry": .bool(false), "notify-exit": .bool(false)]
        var regions = try monitor(try F.region(options: quiet))
        #expect(regions.observe(F.fix(north: 1000, at: 0)).map(\.state) == [.outside])
        #expect(regions.observe(F.fix(north: 0, at: 1)).isEmpty)
        #expect(regions.states() == ["home": .inside])
        #expect(regions.observe(F.fix(north: 1000, at: 2)).isEmpty)
        #expect(regions.states() == ["home": .outside])
    }

    @Test func notifyEntryAndExitChooseWhatIsReported() throws {
        var regions = try monitor(
            try F.region("entries", options: ["notify-exit": .bool(false)]),
            try F.region("exits", options: ["notify-entry": .bool(false)]))
        let first = regions.observe(F.fix(north: 0, at: 0))
        #expect(first.map(\.id) == ["entries", "exits"] && first.allSatisfy { $0.state == .inside })
        let left = regions.observe(F.fix(north: 1000, at: 1))
        #expect(left.map(\.id) == ["exits"] && left.first?.state == .outside)
        let entered = regions.observe(F.fix(north: 0, at: 2))
        #expect(entered.map(\.id) == ["entries"] && entered.first?.state == .inside)
        #expect(regions.states() == ["entries": .inside, "exits": .inside])
    }

    @Test func dwellingIsReportedAtAFixOnceTheDwellTimeHasPassed() throws {
        var regions = try monitor(try F.region(options: ["dwell": .uint32(300)]))
        #expect(regions.observe(F.fix(at: 0)).map(\.state) == [.inside])
        #expect(regions.nextDeadline == F.wall(300))
        #expect(regions.observe(F.fix(north: 30, at: 299)).isEmpty)
        let events = regions.observe(F.fix(north: 30, at: 300))
        #expect(events.map(\.state) == [.dwelling] && events.first?.fix == F.fix(north: 30, at: 300))
        #expect(regions.records(of: F.maps).first?.since == F.wall(300))
        #expect(regions.nextDeadline == nil)
        #expect(regions.observe(F.fix(at: 400)).isEmpty)
        #expect(regions.observe(F.fix(north: 1000, at: 500)).map(\.state) == [.outside])
    }

    @Test func dwellingIsReportedWhenTheDwellTimePassesWithoutAFix() throws {
        var regions = try monitor(try F.region(options: ["dwell": .uint32(300)]))
        let entry = F.fix(at: 10)
        _ = regions.observe(entry)
        #expect(regions.timePassed(now: F.wall(309)).events.isEmpty)
        let (events, removals) = regions.timePassed(now: F.wall(400))
        #expect(removals.isEmpty)
        #expect(events.map(\.state) == [.dwelling])
        #expect(events.first?.fix == entry && events.first?.timestamp == F.wall(310))
        #expect(regions.timePassed(now: F.wall(1000)).events.isEmpty)
        #expect(regions.states() == ["home": .dwelling])
    }

    @Test func leavingBeforeTheDwellTimeStartsItAgainAtTheNextEntry() throws {
        var regions = try monitor(try F.region(options: ["dwell": .uint32(300)]))
        _ = regions.observe(F.fix(at: 0))
        _ = regions.observe(F.fix(north: 1000, at: 100))
        #expect(regions.nextDeadline == nil)
        _ = regions.observe(F.fix(at: 200))
        #expect(regions.nextDeadline == F.wall(500))
        #expect(regions.timePassed(now: F.wall(499)).events.isEmpty)
        #expect(regions.timePassed(now: F.wall(500)).events.map(\.state) == [.dwelling])
    }

    @Test func aFixOlderThanTheDecidingOneIsIgnored() throws {
        var regions = try monitor(try F.region())
        _ = regions.observe(F.fix(at: 10))
        #expect(regions.observe(F.fix(north: 1000, at: 5)).isEmpty)
        #expect(regions.states() == ["home": .inside])
    }

    @Test func aFixAtTheEndOfTimeDoesNotOverflowTheDwellDeadline() throws {
        var regions = try monitor(try F.region(options: ["dwell": .uint32(300)]))
        let last = RegionFix(
            latitude: F.latitude, longitude: F.longitude, accuracy: 5, timestamp: WallTime(microseconds: .max))
        #expect(regions.observe(last).map(\.state) == [.inside])
        #expect(regions.nextDeadline == WallTime(microseconds: .max))
    }

    @Test func anInvalidFixIsIgnored() throws {
        var regions = try monitor(try F.region())
        let fixes = [
            RegionFix(latitude: .nan, longitude: 11, accuracy: 10, timestamp: F.wall()),
            RegionFix(latitude: 48, longitude: 11, accuracy: -1, timestamp: F.wall()),
            RegionFix(latitude: 48, longitude: 11, accuracy: .infinity, timestamp: F.wall()),
            RegionFix(latitude: 91, longitude: 11, accuracy: 10, timestamp: F.wall()),
        ]
        for fix in fixes { #expect(regions.observe(fix).isEmpty) }
        #expect(regions.states() == ["home": .unknown])
    }
}

@Suite("Regions: unknown, expiry, replacing and limits")
struct RegionLifeTests {
    @Test func anUndecidedRegionIsReportedUnknownAfter60SecondsOnce() throws {
        var regions = try monitor(try F.region())
        #expect(regions.nextDeadline == F.wall(60))
        #expect(regions.timePassed(now: F.wall(59.999)).events.isEmpty)
        let events = regions.timePassed(now: F.wall(60)).events
        #expect(events.map(\.state) == [.unknown] && events.first?.fix == nil && events.first?.timestamp == F.wall(60))
        #expect(regions.nextDeadline == nil)
        #expect(regions.timePassed(now: F.wall(600)).events.isEmpty)
        // The first decision after the unknown is still the first: reported whatever the options.
        #expect(regions.observe(F.fix(north: 1000, at: 700)).map(\.state) == [.outside])
    }

    @Test func aDecisionBeforeTheTimeoutCancelsIt() throws {
        var regions = try monitor(try F.region())
        _ = regions.observe(F.fix(north: 1000, at: 30))
        #expect(regions.nextDeadline == nil)
        #expect(regions.timePassed(now: F.wall(60)).events.isEmpty)
    }

    @Test func undecidableMakesEveryRegionUnknownOnce() throws {
        var regions = try monitor(try F.region("a"), try F.region("b", north: 5000), try F.region("c"))
        _ = regions.observe(F.fix(at: 0))
        try regions.add(try F.region("d"), for: F.maps, now: F.wall(1))
        let events = regions.undecidable(now: F.wall(10))
        #expect(events.map(\.id) == ["a", "b", "c", "d"])
        #expect(events.allSatisfy { $0.state == .unknown && $0.fix == nil && $0.timestamp == F.wall(10) })
        #expect(regions.records(of: F.maps).allSatisfy { $0.state == .unknown && $0.since == nil })
        #expect(regions.nextDeadline == nil)
        #expect(regions.undecidable(now: F.wall(20)).isEmpty)
        let decided = regions.observe(F.fix(at: 30))
        #expect(decided.map(\.id) == ["a", "b", "c", "d"])
        #expect(decided.map(\.state) == [.inside, .outside, .inside, .inside])
        #expect(regions.states() == ["a": .inside, "b": .outside, "c": .inside, "d": .inside])
    }

    @Test func anExpiredRegionIsRemoved() throws {
        let expiry = UInt64(F.wall(100).seconds)
        var regions = try monitor(
            try F.region("brief", options: ["expires": .uint64(expiry)]), try F.region("lasting"))
        _ = regions.observe(F.fix(at: 0))
        #expect(regions.nextDeadline == F.wall(100))
        #expect(regions.timePassed(now: F.wall(99)).removals.isEmpty)
        let (events, removals) = regions.timePassed(now: F.wall(100))
        #expect(events.isEmpty)
        #expect(removals == [RegionRemoval(owner: F.maps, ids: ["brief"], reason: .expired)])
        #expect(regions.records(of: F.maps).map(\.region.id) == ["lasting"])
        #expect(regions.nextDeadline == nil)
    }

    @Test func replacingARegionStartsItUndecided() throws {
        var regions = try monitor(try F.region(options: ["notify-entry": .bool(false)]))
        _ = regions.observe(F.fix(at: 0))
        try regions.add(try F.region(north: 3000, options: ["notify-entry": .bool(false)]), for: F.maps, now: F.wall(5))
        #expect(regions.count == 1)
        let record = try #require(regions.records(of: F.maps).first)
        #expect(record.state == .unknown && record.since == nil)
        #expect(record.region.latitude > F.latitude)
        #expect(regions.nextDeadline == F.wall(65))
        #expect(regions.observe(F.fix(north: 3000, at: 10)).map(\.state) == [.inside])
    }

    @Test func anOwnerMayHave1000Regions() throws {
        var regions = RegionMonitor()
        for index in 0..<Region.limitPerOwner {
            try regions.add(try F.region("r\(index)", north: Double(index) * 10), for: F.maps, now: F.wall())
        }
        #expect(throws: RegionLimitReached(owner: F.maps)) {
            try regions.add(try F.region("one-more"), for: F.maps, now: F.wall())
        }
        try regions.add(try F.region("r7", north: 50_000), for: F.maps, now: F.wall())
        try regions.add(try F.region("one-more"), for: F.weather, now: F.wall())
        #expect(regions.count == Region.limitPerOwner + 1)
        #expect(regions.owners == [F.maps, F.weather])
    }

    @Test func removingRegions() throws {
        var regions = try monitor(try F.region("b"), try F.region("a"))
        let removals = [
            regions.remove("a", for: F.maps), regions.remove("a", for: F.maps), regions.remove("b", for: F.weather),
        ]
        #expect(removals == [true, false, false])
        #expect(regions.records(of: F.maps).map(\.region.id) == ["b"])
        let last = regions.remove("b", for: F.maps)
        #expect(last)
        #expect(regions.owners.isEmpty && regions.count == 0 && regions.nextDeadline == nil)
    }

    @Test func removingAllOfAnOwnerDropsItsPendingEvents() throws {
        var regions = try monitor(try F.region("b"), try F.region("a"))
        try regions.add(try F.region("c"), for: F.weather, now: F.wall())
        #expect(regions.queue(regions.observe(F.fix(at: 0))).isEmpty)
        let removal = regions.removeAll(of: F.maps, reason: .authorisationRevoked)
        #expect(removal == RegionRemoval(owner: F.maps, ids: ["a", "b"], reason: .authorisationRevoked))
        #expect(removal?.reason.rawValue == "authorisation-revoked")
        #expect(regions.takePending(for: F.maps).isEmpty)
        #expect(regions.takePending(for: F.weather).map(\.id) == ["c"])
        #expect(regions.removeAll(of: F.maps, reason: .authorisationRevoked) == nil)
        #expect(regions.owners == [F.weather])
    }

    @Test func revokingAnOwnerWithOnlyPendingEventsDropsThemAsAChange() throws {
        var regions = try monitor(try F.region())
        #expect(regions.queue(regions.observe(F.fix(at: 0))).isEmpty)
        let removed = regions.remove("home", for: F.maps)
        #expect(removed && regions.count == 0 && regions.owners.isEmpty && !regions.isEmpty)
        _ = regions.takeChangedUsers()
        // No region to report removed, but the events go, and the user's file must be written without them.
        let removal = regions.removeAll(of: F.maps, reason: .authorisationRevoked)
        #expect(removal == nil)
        let changed = regions.takeChangedUsers()
        #expect(changed == [F.maps.user])
        let pending = regions.takePending(for: F.maps)
        #expect(pending.isEmpty && regions.isEmpty)
    }

    @Test func pendingEventsAreBoundedOldestDroppedFirst() throws {
        var regions = try monitor(try F.region())
        var all: [RegionEvent] = []
        for step in 0..<150 {
            all += regions.observe(F.fix(north: step % 2 == 0 ? 0 : 1000, at: Double(step)))
        }
        #expect(all.count == 150)
        #expect(regions.queue(Array(all.prefix(60))).isEmpty)
        #expect(regions.queue(Array(all.dropFirst(60))) == [F.maps: 50])
        let pending = regions.takePending(for: F.maps)
        #expect(pending == Array(all.suffix(RegionMonitor.pendingLimit)))
        #expect(regions.takePending(for: F.maps).isEmpty)
    }

    @Test func approximateOwnersAreDecidedOnTheCoarsenedFix() throws {
        var regions = try monitor(try F.region(radius: 500))
        try regions.add(try F.region(radius: 500), for: F.weather, now: F.wall())
        let precise = F.fix(north: 0, accuracy: 10, at: 0)
        let coarsened = F.fix(north: 3000, accuracy: 900, at: 0)
        let events = regions.observe(precise, coarsened: coarsened) { $0 == F.weather }
        #expect(events.map(\.owner) == [F.maps, F.weather])
        #expect(events[0].state == .inside && events[0].fix == precise)
        #expect(events[1].state == .outside && events[1].fix == coarsened)
        // Without a coarsened fix, approximate owners are not decided.
        _ = regions.removeAll(of: F.weather, reason: .authorisationRevoked)
        try regions.add(try F.region(radius: 500), for: F.weather, now: F.wall())
        let undecided = regions.observe(F.fix(at: 1), coarsened: nil) { $0 == F.weather }
        #expect(undecided.isEmpty)
        #expect(regions.states(of: F.weather) == ["home": .unknown])
    }
}
