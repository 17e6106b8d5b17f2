/// The power rule: how coarse the fixes may be that still decide the regions, so that the service runs only the
/// providers it needs.
///
/// The levels are taken at the accuracies their providers give: ``RegionRule/nominalCityAccuracy`` (10 km, IP
/// positioning) for city, ``RegionRule/nominalStreetAccuracy`` (100 m, Wi-Fi) for street, and better for exact
/// (a satellite receiver). A level suffices for a region when its nominal accuracy is at most half the distance
/// from the position to the region's boundary (|d − R|), so that the next fix at that level still tells the
/// boundary is not crossed, and at most twice the radius, so that its fixes can decide the region at all (see
/// ``RegionRule``). The level needed is the coarsest that suffices for every region.
///
/// So a region of 5 km or more whose boundary is 20 km or more away needs city; a region under 5 km needs street
/// at least, as city fixes cannot decide it (the 2R clause never asks more than street, as every radius is at least
/// 100 m); within 20 km of a boundary street is needed; within 200 m exact.
///
/// **Cost.** The regions under 5 km are counted per owner, so the 2R clause costs a look at each owner. Only
/// regions whose boundary may lie within 20 km of the position matter for the distance clause, and the grid
/// finds them among the cells within 20 km plus the largest radius in the cells, and the large regions.
extension RegionRule {
    /// What a city-level provider (IP positioning) is taken to give, in metres.
    public static let nominalCityAccuracy = 10_000.0
    /// What a street-level provider (Wi-Fi) is taken to give, in metres.
    public static let nominalStreetAccuracy = 100.0
}

extension RegionMonitor {
    /// The coarsest level whose fixes decide the boundaries of the regions of the owners for whom `include` is
    /// true (those whose grant allows watching now), from `position` (the latest fix); with no position (or not a
    /// valid one) what the radii alone ask (city, or street for a region under 5 km), nil when those owners have no
    /// regions. See the power rule above.
    public func neededLevel(at position: RegionFix?, include: (RegionOwner) -> Bool) -> AccuracyLevel? {
        let included = owners.filter(include)
        guard !included.isEmpty else { return nil }
        // The 2R clause holds wherever the position is, or whether there is one.
        var level = AccuracyLevel.city
        if included.contains(where: { smallRegionCount(of: $0) > 0 }) { level = .street }
        guard let position, position.isValid else { return level }
        let includedOwners = Set(included)
        let reach = 2 * RegionRule.nominalCityAccuracy
        for number in candidates(within: reach, of: position) {
            guard let watch = watches[number], includedOwners.contains(watch.owner) else { continue }
            level = max(level, Self.marginLevel(for: watch.region, at: position))
            if level == .exact { return .exact }
        }
        return level
    }

    /// The coarsest level whose fixes decide `region` alone from `position` (city when there is none): what adding
    /// it asks of the providers, whatever else is watched.
    public static func neededLevel(for region: Region, at position: RegionFix?) -> AccuracyLevel {
        let level: AccuracyLevel = isSmall(region) ? .street : .city
        guard let position, position.isValid else { return level }
        return max(level, marginLevel(for: region, at: position))
    }

    /// The level the distance from `position` to `region`'s boundary asks for.
    private static func marginLevel(for region: Region, at position: RegionFix) -> AccuracyLevel {
        let distance = greatCircleDistance(region.latitude, region.longitude, position.latitude, position.longitude)
        let margin = abs(distance - region.radius) / 2
        if margin < RegionRule.nominalStreetAccuracy { return .exact }
        if margin < RegionRule.nominalCityAccuracy { return .street }
        return .city
    }

    /// True for a region whose fixes must be better than city's to decide it: 2R below the city accuracy.
    static func isSmall(_ region: Region) -> Bool { 2 * region.radius < RegionRule.nominalCityAccuracy }
}
