import TestBasics
import Testing
import WhereaboutsCore

private typealias F = RegionFixtures

/// The rule applied to every region, with no index: what the monitor must do for regions with the default
/// options and no time passing.
private struct BruteForceRegions {
    var regions: [RegionOwner: [String: (region: Region, state: RegionState)]] = [:]

    mutating func add(_ region: Region, for owner: RegionOwner) {
        regions[owner, default: [:]][region.id] = (region, .unknown)
    }

    mutating func remove(_ id: String, for owner: RegionOwner) { regions[owner]?[id] = nil }

    mutating func observe(_ fix: RegionFix) -> [String] {
        var changes: [String] = []
        for (owner, owned) in regions {
            for (id, entry) in owned where fix.accuracy <= 2 * entry.region.radius {
                let probability = RegionRule.probabilityInside(
                    distance: greatCircleDistance(
                        entry.region.latitude, entry.region.longitude, fix.latitude, fix.longitude),
                    radius: entry.region.radius, accuracy: fix.accuracy)
                var state = entry.state
                if probability >= RegionRule.entryProbability, state != .inside { state = .inside }
                if probability <= RegionRule.exitProbability, state != .outside { state = .outside }
                guard state != entry.state else { continue }
                regions[owner]![id]!.state = state
                changes.append("\(owner.app) \(id) \(state)")
            }
        }
        return changes.sorted()
    }

    func neededLevel(at position: RegionFix) -> AccuracyLevel? {
        let all = regions.values.flatMap(\.values)
        guard !all.isEmpty else { return nil }
        var needed = AccuracyLevel.city
        for entry in all {
            let distance = greatCircleDistance(
                entry.region.latitude, entry.region.longitude, position.latitude, position.longitude)
            let limit = min(abs(distance - entry.region.radius) / 2, 2 * entry.region.radius)
            let level: AccuracyLevel =
                limit >= RegionRule.nominalCityAccuracy
                ? .city : limit >= RegionRule.nominalStreetAccuracy ? .street : .exact
            needed = max(needed, level)
        }
        return needed
    }
}

@Suite("Regions: the spatial index")
struct RegionIndexTests {
    /// Places where the grid has edges to get wrong: a city, the antimeridian, near the poles, the equator.
    private static let places: [(latitude: Double, longitude: Double)] = [
        (48, 11), (0.5, 179.95), (-0.5, -179.95), (89.5, 40), (-89.9, -120), (0, 0), (70, -179.99),
    ]

    private func random(_ range: ClosedRange<Double>, _ generator: inout SplitMix64) -> Double {
        Double.random(in: range, using: &generator)
    }

    @Test func theIndexedMonitorAgreesWithABruteForceReference() throws {
        var generator = SplitMix64(seed: 0x5EED_2E61_0A5)
        var monitor = RegionMonitor()
        var reference = BruteForceRegions()
        let owners = (0..<4).map { RegionOwner(user: 1000 + UInt32($0 % 2), app: "org.example.App\($0)") }
        var ids: [(RegionOwner, String)] = []
        for index in 0..<1500 {
            let place = Self.places[index % Self.places.count]
            let radius =
                index % 50 == 0 ? random(20_000...100_000, &generator) : random(100...3_000, &generator)
            let region = try Region.validated(
                id: "r\(index)", latitude: min(90, max(-90, place.latitude + random(-0.3...0.3, &generator))),
                longitude: wrappedLongitude(place.longitude + random(-0.3...0.3, &generator)), radius: radius,
                options: [:], now: F.wall())
            let owner = owners[index % owners.count]
            try monitor.add(region, for: owner, now: F.wall())
            reference.add(region, for: owner)
            ids.append((owner, region.id))
        }
        var changes = 0
        for step in 0..<600 {
            if step % 20 == 19 {
                let (owner, id) = ids.remove(at: Int.random(in: 0..<ids.count, using: &generator))
                let removed = monitor.remove(id, for: owner)
                #expect(removed)
                reference.remove(id, for: owner)
            }
            let place = Self.places[step % Self.places.count]
            let fix = RegionFix(
                latitude: min(90, max(-90, place.latitude + random(-0.35...0.35, &generator))),
                longitude: wrappedLongitude(place.longitude + random(-0.35...0.35, &generator)),
                accuracy: [0, 5, 30, 150, 1_000, 20_000][step % 6], timestamp: F.wall(Double(step)))
            let events = monitor.observe(fix, coarsened: nil, approximate: F.precise)
            let expected = reference.observe(fix)
            changes += expected.count
            #expect(events.map { "\($0.owner.app) \($0.id) \($0.state)" }.sorted() == expected, "step \(step)")
            #expect(monitor.neededLevel(at: fix) { _ in true } == reference.neededLevel(at: fix), "step \(step)")
        }
        #expect(changes > 1000)
        for owner in owners {
            let states = monitor.records(of: owner).map { "\($0.region.id) \($0.state)" }
            let expected = (reference.regions[owner] ?? [:]).sorted { $0.key < $1.key }.map {
                "\($0.key) \($0.value.state)"
            }
            #expect(states == expected)
        }
    }

    @Test func aRegionAcrossTheAntimeridianIsFoundFromBothSides() throws {
        var monitor = RegionMonitor()
        let region = try Region.validated(
            id: "dateline", latitude: 0, longitude: 179.999, radius: 1000, options: [:], now: F.wall())
        try monitor.add(region, for: F.maps, now: F.wall())
        let east = RegionFix(latitude: 0, longitude: -179.997, accuracy: 10, timestamp: F.wall(1))
        #expect(monitor.observe(east, coarsened: nil, approximate: F.precise).map(\.state) == [.inside])
        let west = RegionFix(latitude: 0, longitude: 179.95, accuracy: 10, timestamp: F.wall(2))
        #expect(monitor.observe(west, coarsened: nil, approximate: F.precise).map(\.state) == [.outside])
        let back = RegionFix(latitude: 0.001, longitude: 180, accuracy: 10, timestamp: F.wall(3))
        #expect(monitor.observe(back, coarsened: nil, approximate: F.precise).map(\.state) == [.inside])
    }

    @Test func aRegionOverAPoleIsFoundFromEveryLongitude() throws {
        var monitor = RegionMonitor()
        let region = try Region.validated(
            id: "pole", latitude: 89.999, longitude: 0, radius: 500, options: [:], now: F.wall())
        try monitor.add(region, for: F.maps, now: F.wall())
        for (step, longitude) in [-180.0, -90, 0, 90, 135, 180].enumerated() {
            let far = RegionFix(latitude: 89.9, longitude: longitude, accuracy: 10, timestamp: F.wall(Double(2 * step)))
            let near = RegionFix(
                latitude: 90, longitude: longitude, accuracy: 10, timestamp: F.wall(Double(2 * step + 1)))
            #expect(monitor.observe(far, coarsened: nil, approximate: F.precise).map(\.state) == [.outside])
            #expect(monitor.observe(near, coarsened: nil, approximate: F.precise).map(\.state) == [.inside])
        }
    }

    /// `longitude` brought back into −180…180.
    private func wrappedLongitude(_ longitude: Double) -> Double {
        longitude > 180 ? longitude - 360 : longitude < -180 ? longitude + 360 : longitude
    }
}

@Suite("Regions: the power rule")
struct RegionPowerRuleTests {
    /// A monitor with a region of `radius` whose boundary is `boundary` metres south of the fixtures' centre.
    private func monitor(radius: Double, boundaryNorth boundary: Double) throws -> RegionMonitor {
        var monitor = RegionMonitor()
        try monitor.add(try F.region(north: boundary + radius, radius: radius), for: F.maps, now: F.wall())
        return monitor
    }

    private let here = F.fix(at: 0)

    @Test func noRegionsNeedNothing() throws {
        #expect(RegionMonitor().neededLevel(at: here) { _ in true } == nil)
        let monitor = try monitor(radius: 5000, boundaryNorth: 50)
        #expect(monitor.neededLevel(at: here) { $0 != F.maps } == nil)
    }

    /// With no position only the radii speak: city for large regions, street for one city fixes cannot decide,
    /// as a region added before any fix asks (``RegionMonitor/neededLevel(for:at:)``).
    @Test func withoutAPositionTheRadiiDecide() throws {
        #expect(try monitor(radius: 5000, boundaryNorth: 50).neededLevel(at: nil) { _ in true } == .city)
        #expect(try monitor(radius: 200, boundaryNorth: 50).neededLevel(at: nil) { _ in true } == .street)
        #expect(RegionMonitor.neededLevel(for: try F.region(radius: 200), at: nil) == .street)
    }

    @Test func aLargeRegion20KilometresAwayNeedsCity() throws {
        #expect(try monitor(radius: 5000, boundaryNorth: 20_000).neededLevel(at: here) { _ in true } == .city)
        #expect(try monitor(radius: 5000, boundaryNorth: 19_900).neededLevel(at: here) { _ in true } == .street)
        #expect(try monitor(radius: 100_000, boundaryNorth: 30_000).neededLevel(at: here) { _ in true } == .city)
    }

    @Test func aRegionUnder5KilometresNeedsStreetEvenFarAway() throws {
        #expect(try monitor(radius: 4999, boundaryNorth: 500_000).neededLevel(at: here) { _ in true } == .street)
    }

    @Test func aBoundary1KilometreAwayNeedsStreet() throws {
        #expect(try monitor(radius: 5000, boundaryNorth: 1000).neededLevel(at: here) { _ in true } == .street)
        #expect(try monitor(radius: 300, boundaryNorth: 200).neededLevel(at: here) { _ in true } == .street)
    }

    @Test func aBoundary50MetresAwayNeedsExact() throws {
        #expect(try monitor(radius: 5000, boundaryNorth: 50).neededLevel(at: here) { _ in true } == .exact)
        // Inside, 50 m from the boundary.
        #expect(try monitor(radius: 5000, boundaryNorth: -50).neededLevel(at: here) { _ in true } == .exact)
    }

    @Test func theNearestBoundaryOfTheIncludedOwnersDecides() throws {
        var monitor = try monitor(radius: 5000, boundaryNorth: 30_000)
        try monitor.add(try F.region("near", north: 5050, radius: 5000), for: F.weather, now: F.wall())
        #expect(monitor.neededLevel(at: here) { _ in true } == .exact)
        #expect(monitor.neededLevel(at: here) { $0 == F.maps } == .city)
    }
}
