import Testing
import WhereaboutsCore

private typealias F = RegionFixtures

/// The argument `Region.validated` names in its refusal, or nil when it accepts.
private func refusedArgument(
    id: String = "home", latitude: Double = 48, longitude: Double = 11, radius: Double = 200,
    options: [String: RegionOptionValue] = [:]
) -> String? {
    do {
        _ = try Region.validated(
            id: id, latitude: latitude, longitude: longitude, radius: radius, options: options, now: F.wall())
        return nil
    } catch {
        #expect(!error.description.isEmpty)
        return error.argument
    }
}

@Suite("Regions: AddRegion's arguments")
struct RegionValidationTests {
    @Test func optionsAreReadAndASmallRadiusIsRaised() throws {
        let region = try Region.validated(
            id: "home", latitude: -90, longitude: 180, radius: 0.5,
            options: [
                "notify-entry": .bool(false), "notify-exit": .bool(false), "dwell": .uint32(90),
                "expires": .uint64(UInt64(F.wall().seconds)),
            ], now: F.wall())
        #expect(region.radius == Region.minimumRadius)
        #expect(!region.options.notifyEntry && !region.options.notifyExit)
        #expect(region.options.dwell == .seconds(90) && region.options.expires == F.wall())
        let plain = try Region.validated(
            id: "x", latitude: 0, longitude: 0, radius: 100_000, options: ["dwell": .uint32(0), "expires": .uint64(0)],
            now: F.wall())
        #expect(plain.options == RegionOptions() && plain.radius == 100_000)
    }

    @Test func badArgumentsAreNamed() {
        #expect(refusedArgument() == nil)
        #expect(refusedArgument(id: "") == "id")
        #expect(refusedArgument(id: String(repeating: "é", count: 128)) == "id")
        #expect(refusedArgument(id: String(repeating: "x", count: 255)) == nil)
        #expect(refusedArgument(id: "a\u{0}b") == "id")
        #expect(refusedArgument(latitude: 90.000_1) == "latitude")
        #expect(refusedArgument(latitude: .nan) == "latitude")
        #expect(refusedArgument(longitude: -180.1) == "longitude")
        #expect(refusedArgument(longitude: .infinity) == "longitude")
        #expect(refusedArgument(radius: 0) == "radius")
        #expect(refusedArgument(radius: -5) == "radius")
        #expect(refusedArgument(radius: 100_000.1) == "radius")
        #expect(refusedArgument(radius: .nan) == "radius")
    }

    @Test func badOptionsAreNamed() {
        #expect(refusedArgument(options: ["colour": .bool(true)]) == "options")
        #expect(refusedArgument(options: ["notify-entry": .uint32(1)]) == "notify-entry")
        #expect(refusedArgument(options: ["notify-exit": .other(signature: "s")]) == "notify-exit")
        #expect(refusedArgument(options: ["dwell": .uint64(60)]) == "dwell")
        #expect(refusedArgument(options: ["expires": .uint32(60)]) == "expires")
        #expect(refusedArgument(options: ["expires": .uint64(UInt64(F.wall().seconds) - 1)]) == "expires")
        #expect(refusedArgument(options: ["expires": .uint64(.max)]) == "expires")
    }
}
