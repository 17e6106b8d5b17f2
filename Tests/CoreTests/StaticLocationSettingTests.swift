import Testing
import WhereaboutsCore

@Suite("A static location set through the bus")
struct StaticLocationSettingTests {
    @Test func valuesInRangeMakeALocationThatRoundTripsThroughTheFileFormat() throws {
        let location = try StaticLocation(checkingLatitude: -33.8568, longitude: 151.2153, altitude: -12.5, accuracy: 0)
        #expect(try StaticLocationFile.parse(location.fileText, file: "static-location") == location)
        let edges = try StaticLocation(checkingLatitude: 90, longitude: -180, altitude: 8848, accuracy: 1e7)
        #expect(try StaticLocationFile.parse(edges.fileText, file: "static-location") == edges)
    }

    @Test(arguments: [
        ([90.5, 0, 0, 1], StaticLocationError.Problem.outOfRange(.latitude, "90.5")),
        ([0, 180.25, 0, 1], .outOfRange(.longitude, "180.25")),
        ([0, 0, 0, -1], .outOfRange(.accuracy, "-1.0")),
        ([Double.nan, 0, 0, 1], .notFinite(.latitude, "nan")),
        ([0, 0, Double.infinity, 1], .notFinite(.altitude, "inf")),
    ])
    func valuesOutOfRangeAreRefusedByName(values: [Double], problem: StaticLocationError.Problem) {
        #expect(throws: problem) {
            _ = try StaticLocation(
                checkingLatitude: values[0], longitude: values[1], altitude: values[2], accuracy: values[3])
        }
    }
}
