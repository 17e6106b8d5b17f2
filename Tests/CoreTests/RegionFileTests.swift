import Testing
import WhereaboutsCore

private typealias F = RegionFixtures

/// The error parsing `text` at ``RegionFixtures/wall(_:)`` 0 throws, or nil when it parses.
private func fileError(_ text: String) -> RegionFileError? {
    do {
        _ = try RegionFile.parse(text, now: F.wall(), file: "regions")
        return nil
    } catch {
        return error
    }
}

/// A monitor with regions in every phase, options of every kind, ids that need escaping and pending events.
private func fullMonitor() throws -> RegionMonitor {
    var monitor = RegionMonitor()
    let odd = RegionOwner(user: 4_294_967_295, app: "org.example.Tab\tApp\\x")
    try monitor.add(try F.region("undecided", radius: 50), for: F.maps, now: F.wall(-10))
    try monitor.add(
        try F.region("inside\twith\ndwell\\", north: 0.1, options: ["dwell": .uint32(600)]), for: F.maps,
        now: F.wall(-20))
    try monitor.add(
        try F.region(
            "outside", north: 5000, radius: 123.456_789_012_345_6,
            options: ["notify-entry": .bool(false), "expires": .uint64(UInt64(F.wall(3600).seconds))]),
        for: F.maps, now: F.wall(-30))
    try monitor.add(try F.region("dwelling", options: ["dwell": .uint32(1)]), for: odd, now: F.wall(-100))
    _ = monitor.timePassed(now: F.wall(-40))
    let events = monitor.observe(
        RegionFix(latitude: 48.000_000_1, longitude: 11.000_000_3, accuracy: 12.345, timestamp: F.wall(-5)),
        coarsened: nil, approximate: F.precise)
    #expect(monitor.queue(events).isEmpty)
    try monitor.add(try F.region("unknown", north: -3000), for: odd, now: F.wall(-100))
    // The verified app of the same id is another owner, with a region of the same id.
    try monitor.add(
        try F.region("undecided", radius: 70), for: RegionOwner(user: 1000, app: "org.example.Maps", verified: true),
        now: F.wall(-10))
    _ = monitor.timePassed(now: F.wall(-2))
    return monitor
}

@Suite("Regions: the state file")
struct RegionFileTests {
    @Test func aMonitorReadsBackExactly() throws {
        var monitor = try fullMonitor()
        let text = RegionFile.serialize(monitor)
        var read = try RegionFile.parse(text, now: F.wall())
        #expect(RegionFile.serialize(read) == text)
        #expect(read.owners == monitor.owners && read.count == monitor.count && read.count == 6)
        for owner in monitor.owners { #expect(read.records(of: owner) == monitor.records(of: owner)) }
        #expect(read.nextDeadline == monitor.nextDeadline)
        let states = Set(monitor.owners.flatMap { monitor.records(of: $0).map(\.state) })
        #expect(states == [.unknown, .inside, .outside, .dwelling])
        for owner in monitor.owners { #expect(read.takePending(for: owner) == monitor.takePending(for: owner)) }
        // The restored regions go on as the originals would.
        #expect(read.timePassed(now: F.wall(4000)) == monitor.timePassed(now: F.wall(4000)))
        let fix = F.fix(at: 4000)
        #expect(
            read.observe(fix, coarsened: nil, approximate: F.precise)
                == monitor.observe(fix, coarsened: nil, approximate: F.precise))
    }

    @Test func theFormatIsTabSeparatedLines() throws {
        var monitor = RegionMonitor()
        let region = try Region.validated(
            id: "home", latitude: 48.5, longitude: 11.25, radius: 150, options: ["dwell": .uint32(600)],
            now: F.wall())
        try monitor.add(region, for: F.maps, now: F.wall())
        let events = monitor.observe(
            RegionFix(latitude: 48.5, longitude: 11.25, accuracy: 20, timestamp: F.wall(30)), coarsened: nil,
            approximate: F.precise)
        _ = monitor.queue(events)
        #expect(
            RegionFile.serialize(monitor) == """
                # whereabouts regions 2
                region\t1000\torg.example.Maps\tclaimed\thome\t48.5\t11.25\t150.0\ttrue\ttrue\t600\t0\t1700000000000000\t\
                inside\ttrue\t48.5\t11.25\t20.0\t1700000030000000
                event\t1000\torg.example.Maps\tclaimed\thome\tinside\t1700000030000000\t48.5\t11.25\t20.0\t1700000030000000

                """)
    }

    @Test func versionTwoSaysWhoseRegionAndCountsItsOwnFields() {
        let line = Self.inside.replacingOccurrences(of: "org.example.Maps\t", with: "org.example.Maps\tverified\t")
        let file = "# whereabouts regions 2\n" + line + "\n"
        #expect(fileError(file) == nil)
        #expect(
            fileError("# whereabouts regions 2\n" + Self.inside + "\n")?.problem == .fieldCount(found: 18, expected: 19)
        )
        #expect(
            fileError(file.replacingOccurrences(of: "\tverified\t", with: "\tmaybe\t"))?.problem
                == .invalidField(name: "verified", value: "maybe"))
        #expect(fileError("# whereabouts regions 2\nzone\t1\n")?.problem == .unknownLineKind("zone"))
    }

    @Test func anEmptyMonitorIsTheHeader() throws {
        #expect(RegionFile.serialize(RegionMonitor()) == "# whereabouts regions 2\n")
        #expect(try RegionFile.parse("# whereabouts regions 2\n", now: F.wall()).count == 0)
        #expect(try RegionFile.parse("# whereabouts regions 1\n", now: F.wall()).count == 0)
        #expect(try RegionFile.parse("# whereabouts regions 1", now: F.wall()).count == 0)
    }

    @Test func expiredRegionsAreLeftOut() throws {
        var monitor = RegionMonitor()
        try monitor.add(
            try F.region("soon", options: ["expires": .uint64(UInt64(F.wall(10).seconds))]), for: F.maps, now: F.wall())
        try monitor.add(
            try F.region("later", options: ["expires": .uint64(UInt64(F.wall(20).seconds))]), for: F.maps, now: F.wall()
        )
        let read = try RegionFile.parse(RegionFile.serialize(monitor), now: F.wall(10))
        #expect(read.records(of: F.maps).map(\.region.id) == ["later"])
    }

    private static let region =
        "region\t1000\torg.example.Maps\thome\t48.5\t11.25\t150.0\ttrue\ttrue\t600\t0\t1700000000000000\t"
    private static let inside = region + "inside\ttrue\t48.5\t11.25\t20.0\t1700000030000000"
    private static let event = "event\t1000\torg.example.Maps\thome\tinside\t1700000030000000\t48.5\t11.25\t20.0\t1"

    /// `line` as the second line of a file of version 1 (owners without their verified field), after the header.
    private static func file(_ lines: String...) -> String {
        (["# whereabouts regions 1"] + lines).joined(separator: "\n") + "\n"
    }

    @Test(
        arguments: [
            ("", 1, RegionFileProblem.missingHeader),
            ("# whereabouts grants 1\n", 1, .missingHeader),
            ("# whereabouts regions 3\n", 1, .unsupportedVersion("3")),
            (file(inside, "", event), 3, .emptyLine),
            (file("zone\t1"), 2, .unknownLineKind("zone")),
            (file(inside + "\t"), 2, .fieldCount(found: 19, expected: 18)),
            (file(event + "\t1"), 2, .fieldCount(found: 11, expected: 10)),
            (file(inside.replacingFirst("1000", "-1")), 2, .invalidField(name: "user", value: "-1")),
            (file(inside.replacingFirst("1000", "4294967296")), 2, .invalidField(name: "user", value: "4294967296")),
            (file(inside.replacingFirst("Maps", "Ma\\ps")), 2, .invalidField(name: "app", value: "org.example.Ma\\ps")),
            (file(inside.replacingFirst("home", "home\\")), 2, .invalidField(name: "id", value: "home\\")),
            (file(inside.replacingFirst("48.5", "nan")), 2, .invalidField(name: "latitude", value: "nan")),
            (file(inside.replacingFirst("11.25", "0x1p3")), 2, .invalidField(name: "longitude", value: "0x1p3")),
            (file(inside.replacingFirst("150.0", "1e999")), 2, .invalidField(name: "radius", value: "1e999")),
            (file(inside.replacingFirst("true", "yes")), 2, .invalidField(name: "notify-entry", value: "yes")),
            (file(inside.replacingFirst("\t600", "\t+600")), 2, .invalidField(name: "dwell", value: "+600")),
            (
                file(inside.replacingFirst("\t600", "\t4294967296")), 2,
                .invalidField(name: "dwell", value: "4294967296")
            ),
            (file(inside.replacingFirst("\t0\t", "\t-\t")), 2, .invalidField(name: "expires", value: "-")),
            (file(inside.replacingFirst("1700000000000000", "17e14")), 2, .invalidField(name: "added", value: "17e14")),
            (file(inside.replacingFirst("inside", "in")), 2, .invalidField(name: "phase", value: "in")),
            (file(inside.replacingFirst("inside\ttrue", "inside\t1")), 2, .invalidField(name: "decided", value: "1")),
            (file(inside.replacingFirst("\t20.0", "\t-")), 2, .invalidField(name: "fix accuracy", value: "-")),
            (file(inside.replacingFirst("1700000030000000", "x")), 2, .invalidField(name: "fix time", value: "x")),
            (file(event.replacingFirst("inside", "entered")), 2, .invalidField(name: "state", value: "entered")),
            (file(event.replacingFirst("1700000030000000", "")), 2, .invalidField(name: "timestamp", value: "")),
        ] as [(String, Int, RegionFileProblem)])
    func aBadFieldRefusesTheFile(text: String, line: Int, problem: RegionFileProblem) {
        let error = fileError(text)
        #expect(error?.line == line)
        #expect(error?.problem == problem)
        #expect(error?.file == "regions")
    }

    @Test(arguments: [
        (inside.replacingFirst("48.5", "90.5"), "latitude"),
        (inside.replacingFirst("11.25", "-180.5"), "longitude"),
        (inside.replacingFirst("150.0", "99.5"), "radius"),
        (inside.replacingFirst("150.0", "100000.5"), "radius"),
        (inside.replacingFirst("\thome\t", "\t\t"), "id"),
        (inside.replacingFirst("\thome\t", "\t" + String(repeating: "x", count: 256) + "\t"), "id"),
        (event.replacingFirst("\thome\t", "\t\t"), "id"),
        (inside.replacingFirst("\t0\t", "\t9223372036855\t"), "expires"),
    ])
    func aRegionBreakingAddRegionsRulesRefusesTheFile(line: String, argument: String) {
        let error = fileError(Self.file(Self.inside.replacingFirst("home", "first"), line))
        #expect(error?.line == 3)
        guard case .invalidRegion(let refusal) = error?.problem else {
            Issue.record("not an invalid region: \(String(describing: error))")
            return
        }
        #expect(refusal.argument == argument)
    }

    @Test(arguments: [
        region + "undecided\ttrue\t-\t-\t-\t-",
        region + "undecided\tfalse\t48.5\t11.25\t20.0\t1",
        region + "unknown\ttrue\t48.5\t11.25\t20.0\t1",
        region + "inside\ttrue\t-\t-\t-\t-",
        region + "outside\tfalse\t48.5\t11.25\t20.0\t1",
        region + "dwelling\ttrue\t-\t-\t-\t-",
        region + "inside\ttrue\t48.5\t11.25\t-1.0\t1",
        region + "inside\ttrue\t91.0\t11.25\t1.0\t1",
        event.replacingFirst("inside", "unknown"),
        "event\t1000\torg.example.Maps\thome\tinside\t1\t-\t-\t-\t-",
    ])
    func aStateThatDoesNotFitItsFixRefusesTheFile(line: String) {
        let error = fileError(Self.file(line))
        #expect(error?.line == 2)
        guard case .inconsistentState = error?.problem else {
            Issue.record("not an inconsistent state: \(String(describing: error))")
            return
        }
    }

    @Test func aSecondRegionOfTheSameIDRefusesTheFile() {
        let error = fileError(Self.file(Self.inside, Self.event, Self.inside.replacingFirst("150.0", "200.0")))
        #expect(error?.line == 4 && error?.problem == .duplicateRegion("home"))
        // Another owner may have the same id.
        #expect(fileError(Self.file(Self.inside, Self.inside.replacingFirst("1000", "1001"))) == nil)
    }

    @Test func moreThanTheLimitsRefuseTheFile() {
        let regions = (0...Region.limitPerOwner).map { Self.inside.replacingFirst("home", "r\($0)") }
        let tooMany = fileError(Self.file(regions.joined(separator: "\n")))
        #expect(tooMany?.line == Region.limitPerOwner + 2 && tooMany?.problem == .tooManyRegions(F.maps))
        let events = Array(repeating: Self.event, count: RegionMonitor.pendingLimit + 1)
        let tooManyEvents = fileError(Self.file(events.joined(separator: "\n")))
        #expect(tooManyEvents?.line == RegionMonitor.pendingLimit + 2)
        #expect(tooManyEvents?.problem == .tooManyPendingEvents(F.maps))
    }

    @Test func errorsNameTheFileAndLine() {
        let error = fileError(Self.file(Self.inside, "zone"))
        #expect(error?.description == "regions:3: line kind 'zone' is neither 'region' nor 'event'")
    }
}

extension String {
    /// The text with the first `target` replaced by `replacement`.
    fileprivate func replacingFirst(_ target: String, _ replacement: String) -> String {
        guard let range = firstRange(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
