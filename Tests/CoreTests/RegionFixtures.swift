import WhereaboutsCore

/// Owners, regions and fixes for the region tests: regions around 48° N 11° E, fixes placed by metres north.
enum RegionFixtures {
    static let maps = RegionOwner(user: 1000, app: "org.example.Maps")
    static let weather = RegionOwner(user: 1000, app: "org.example.Weather")
    static let latitude = 48.0
    static let longitude = 11.0
    /// Metres in a degree of latitude on the mean Earth sphere.
    static let metresPerDegree = meanEarthRadius * Double.pi / 180

    /// `seconds` after 2023-11-14T22:13:20Z.
    static func wall(_ seconds: Double = 0) -> WallTime {
        WallTime(microseconds: 1_700_000_000_000_000 + Int64((seconds * 1e6).rounded()))
    }

    /// A region of `radius` metres around the fixtures' centre, or `north` metres north of it.
    static func region(
        _ id: String = "home", north: Double = 0, radius: Double = 200, options: [String: RegionOptionValue] = [:]
    ) throws -> Region {
        try Region.validated(
            id: id, latitude: latitude + north / metresPerDegree, longitude: longitude, radius: radius,
            options: options, now: wall())
    }

    /// A fix `north` metres north of the centre (south when negative), `seconds` after ``wall(_:)``'s origin.
    static func fix(north: Double = 0, accuracy: Double = 20, at seconds: Double) -> RegionFix {
        RegionFix(
            latitude: latitude + north / metresPerDegree, longitude: longitude, accuracy: accuracy,
            timestamp: wall(seconds))
    }

    /// For `approximate:`: every owner precise.
    static func precise(_ owner: RegionOwner) -> Bool { false }
}
