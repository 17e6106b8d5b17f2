import Testing
import WhereaboutsCore

/// The error that parsing `text` throws, or nil when it parses.
private func staticError(_ text: String) -> StaticLocationError? {
    do {
        _ = try StaticLocationFile.parse(text, file: "/etc/geolocation")
        return nil
    } catch {
        return error
    }
}

@Suite struct StaticLocationFileTests {
    @Test func geoclueManPageExample() throws {
        let location = try StaticLocationFile.parse(
            """
            # Example static location file for a machine on Liberty Island
            40.6893129   # latitude
            -74.0445531  # longitude
            96           # altitude
            1.83         # accuracy radius (the diameter of the torch is 12 feet)
            """, file: "/etc/geolocation")
        #expect(location == StaticLocation(latitude: 40.6893129, longitude: -74.0445531, altitude: 96, accuracy: 1.83))
    }

    @Test func commentsBlankLinesWhitespaceAndCRLF() throws {
        let text =
            "\r\n# header\r\n\r\n  \t51.4779\t\r\n#comment between\r\n -0.0015 #east of Greenwich\r\n\r\n"
            + "   46   \r\n0#no space before the comment\r\n\r\n# trailing comment\r\n"
        let location = try StaticLocationFile.parse(text, file: "g")
        #expect(location == StaticLocation(latitude: 51.4779, longitude: -0.0015, altitude: 46, accuracy: 0))
    }

    @Test func boundariesAreAccepted() throws {
        #expect(try StaticLocationFile.parse("90\n180\n-430.5\n0\n", file: "g").latitude == 90)
        #expect(try StaticLocationFile.parse("-90\n-180\n8848\n1e6\n", file: "g").longitude == -180)
        #expect(
            try StaticLocationFile.parse("+1\n.5\n-0\n5.\n", file: "g")
                == StaticLocation(
                    latitude: 1, longitude: 0.5, altitude: 0, accuracy: 5))
    }

    @Test func makesAStaticFix() throws {
        let location = StaticLocation(latitude: 48.8584, longitude: 2.2945, altitude: 35, accuracy: 12)
        let time = WallTime(microseconds: 1_700_000_000_123_456)
        let fix = location.fix(at: time)
        #expect(
            fix
                == Fix(
                    latitude: 48.8584, longitude: 2.2945, horizontalAccuracy: 12, altitude: 35, timestamp: time,
                    provider: .static, description: "Static location"))
        #expect(fix.provider == .static)
        #expect(fix.description == "Static location")
        #expect(fix.altitude == 35)
        #expect(fix.horizontalAccuracy == 12)
        #expect(fix.timestamp == time)
        #expect(fix.speed == nil && fix.course == nil)
    }

    @Test func emptyFileHasTooFewValues() throws {
        for text in ["", "\n", "# only a comment\n", "   \n\t\n"] {
            let error = try #require(staticError(text))
            #expect(error.problem == .tooFewValues(found: 0))
            #expect(error.description.hasPrefix("/etc/geolocation:"))
            #expect(error.description.contains("too few values: found 0 of 4"))
        }
        #expect(staticError("")?.line == 1)
        #expect(staticError("\n\n\n")?.line == 3)
    }

    @Test func missingValuesAreNamed() throws {
        let error = try #require(staticError("51.5\n-0.1\n"))
        #expect(error == StaticLocationError(file: "/etc/geolocation", line: 2, problem: .tooFewValues(found: 2)))
        #expect(error.description.hasPrefix("/etc/geolocation:2: too few values: found 2 of 4, missing altitude"))
        #expect(error.description.contains("accuracy"))

        let noNewline = try #require(staticError("51.5\n-0.1\n10"))
        #expect(noNewline.line == 3)
        #expect(noNewline.problem == .tooFewValues(found: 3))
    }

    @Test func fifthValueIsTooMany() throws {
        let error = try #require(staticError("1\n2\n3\n4\n# fine\n\n5\n"))
        #expect(error == StaticLocationError(file: "/etc/geolocation", line: 7, problem: .tooManyValues("5")))
        #expect(error.description.hasPrefix("/etc/geolocation:7: too many values: '5'"))
    }

    @Test(arguments: [
        ("north", StaticLocationError.Field.latitude, 1), ("51.5 -0.1", .latitude, 1), ("1,5", .longitude, 2),
        ("12m", .altitude, 3), ("0x", .accuracy, 4), ("- 5", .accuracy, 4),
    ])
    func notANumber(value: String, field: StaticLocationError.Field, line: Int) throws {
        var values = ["51.5", "-0.1", "10", "5"]
        values[line - 1] = value
        let error = try #require(staticError(values.joined(separator: "\n")))
        #expect(error == StaticLocationError(file: "/etc/geolocation", line: line, problem: .notANumber(field, value)))
        #expect(error.description.hasPrefix("/etc/geolocation:\(line): \(field): '\(value)' is not a number"))
    }

    @Test(arguments: ["nan", "NaN", "inf", "-infinity", "1e999"])
    func nonFiniteValues(value: String) throws {
        for line in 1...4 {
            var values = ["51.5", "-0.1", "10", "5"]
            values[line - 1] = value
            let error = try #require(staticError(values.joined(separator: "\n") + "\n"))
            #expect(error.line == line)
            #expect(error.problem == .notFinite(StaticLocationError.Field(rawValue: line - 1)!, value))
            #expect(error.description.contains("'\(value)' is not a finite number"))
        }
    }

    @Test(arguments: [
        ("90.000001", StaticLocationError.Field.latitude, 1), ("-91", .latitude, 1), ("180.5", .longitude, 2),
        ("-181", .longitude, 2), ("-0.001", .accuracy, 4), ("-5", .accuracy, 4),
    ])
    func outOfRange(value: String, field: StaticLocationError.Field, line: Int) throws {
        var values = ["51.5", "-0.1", "10", "5"]
        values[line - 1] = value
        let error = try #require(staticError(values.joined(separator: "\n")))
        #expect(error == StaticLocationError(file: "/etc/geolocation", line: line, problem: .outOfRange(field, value)))
        #expect(error.description == "/etc/geolocation:\(line): \(field): '\(value)' is out of range")
    }

    @Test func fieldDescriptionsAndRanges() {
        #expect(StaticLocationError.Field.latitude.description == "latitude (degrees, -90 to 90)")
        #expect(StaticLocationError.Field.longitude.range == -180...180)
        #expect(StaticLocationError.Field.altitude.range == nil)
        #expect(StaticLocationError.Field.accuracy.range?.lowerBound == 0)
    }

    @Test func hugeInputIsHandled() throws {
        let hugeComment = "#" + String(repeating: "c", count: 1 << 20)
        let location = try StaticLocationFile.parse("\(hugeComment)\n1\n2 \(hugeComment)\n3\n4\n", file: "g")
        #expect(location == StaticLocation(latitude: 1, longitude: 2, altitude: 3, accuracy: 4))

        let hugeValue = String(repeating: "9", count: 1 << 20)
        let error = try #require(staticError("\(hugeValue)\n2\n3\n4\n"))
        #expect(error.line == 1)
        #expect(error.description.count < 300)

        let garbage = String(repeating: "z", count: 1 << 20)
        let garbageError = try #require(staticError("1\n\(garbage)\n"))
        #expect(garbageError.line == 2)
        #expect(garbageError.description.count < 300)
    }
}
