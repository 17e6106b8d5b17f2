import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// The error that parsing `text` as GPX throws, or nil if it parses.
private func gpxError(_ text: String) -> GPXError? {
    do {
        _ = try GPXDocument(parsing: text)
        return nil
    } catch {
        return error
    }
}

@Suite("GPX parsing")
struct GPXDocumentTests {
    static let gpx11 = """
        <?xml version="1.0" encoding="UTF-8" standalone="no" ?>
        <!-- exported by a test -->
        <gpx version="1.1" creator="Whereabouts &amp; friends" xmlns="http://www.topografix.com/GPX/1/1"
             xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v1">
          <metadata><name>Morning walk</name><time>2024-03-15T11:59:00Z</time></metadata>
          <trk>
            <name><![CDATA[Walk <1>]]></name>
            <trkseg>
              <trkpt lat="48.1173" lon="11.5167">
                <ele>545.4</ele>
                <time>2024-03-15T12:00:00Z</time>
                <hdop>0.9</hdop>
                <vdop>1.4</vdop>
                <extensions>
                  <gpxtpx:TrackPointExtension><gpxtpx:speed>99</gpxtpx:speed><ele>1</ele></gpxtpx:TrackPointExtension>
                  <trkpt lat="0" lon="0"/>
                </extensions>
              </trkpt>
              <trkpt lat='48.1180' lon='11.5170'><ele> 546.0 </ele><time>2024-03-15T12:00:01.250Z</time></trkpt>
            </trkseg>
            <trkseg>
              <trkpt lat="-33.5" lon="-180"/>
            </trkseg>
          </trk>
        </gpx>
        """

    @Test func readsTrackPoints() throws {
        let document = try GPXDocument(parsing: Self.gpx11)
        #expect(document.waypoints.isEmpty)
        #expect(document.routePoints.isEmpty)
        #expect(document.trackPoints.count == 3)
        let first = document.trackPoints[0]
        #expect(first.latitude == 48.1173)
        #expect(first.longitude == 11.5167)
        #expect(first.elevation == 545.4)
        #expect(first.time == utc(march15, 12, 0, 0))
        #expect(first.hdop == 0.9)
        #expect(first.vdop == 1.4)
        #expect(first.speed == nil)
        #expect(first.line == 9)
        let second = document.trackPoints[1]
        #expect(second.elevation == 546.0)
        #expect(second.time == utc(march15, 12, 0, 1.25))
        #expect(second.line == 19)
        let third = document.trackPoints[2]
        #expect(third.latitude == -33.5 && third.longitude == -180)
        #expect(third.time == nil && third.elevation == nil)
    }

    @Test func readsGPX10SpeedAndCourseRoutesAndWaypoints() throws {
        let text = """
            <?xml version="1.0"?>
            <gpx version="1.0" creator="test" xmlns="http://www.topografix.com/GPX/1/0">
              <wpt lat="1.5" lon="2.5"><name>Start &lt;here&gt;</name><sym>Flag</sym></wpt>
              <rte><rtept lat="3" lon="4"><course>360</course></rtept><rtept lat="5" lon="6"/></rte>
              <trk><trkseg><trkpt lat="7" lon="8"><speed>1.5</speed><course>90.5</course><geoidheight>47</geoidheight></trkpt></trkseg></trk>
            </gpx>
            """
        let document = try GPXDocument(parsing: text)
        #expect(document.waypoints.map(\.latitude) == [1.5])
        #expect(document.routePoints.map(\.latitude) == [3, 5])
        #expect(document.routePoints[0].course == 0)
        #expect(document.trackPoints.count == 1)
        #expect(document.trackPoints[0].speed == 1.5)
        #expect(document.trackPoints[0].course == 90.5)
        #expect(document.trackPoints[0].geoidHeight == 47)
    }

    @Test func ignoresNamespacePrefixesDoctypesAndReferences() throws {
        let text = """
            \u{FEFF}<?xml version="1.0"?>
            <!DOCTYPE gpx [ <!ENTITY x "y>z"> <!-- ] --> ]>
            <g:gpx xmlns:g="http://www.topografix.com/GPX/1/1" version="1.1">
              <g:trk><g:trkseg>
                <g:trkpt lat="&#52;8.5" lon="1&#x31;.0"><g:ele>1<!-- split -->0<![CDATA[.5]]></g:ele></g:trkpt>
              </g:trkseg></g:trk>
            </g:gpx>

            """
        let document = try GPXDocument(parsing: text)
        #expect(document.trackPoints.count == 1)
        #expect(document.trackPoints[0].latitude == 48.5)
        #expect(document.trackPoints[0].longitude == 11.0)
        #expect(document.trackPoints[0].elevation == 10.5)
    }

    @Test(arguments: [
        ("2024-03-15T12:00:00Z", 0.0), ("2024-03-15T12:00:00.5Z", 0.5), ("2024-03-15T12:00:00.123456789Z", 0.123456),
        ("2024-03-15T14:00:00+02:00", 0.0), ("2024-03-15T07:30:00-04:30", 0.0), ("2024-03-15T12:00:00", 0.0),
        ("2024-03-16T01:00:00+13:00", 0.0),
    ])
    func readsTimes(text: String, fraction: Double) throws {
        let document = try GPXDocument(parsing: "<gpx><wpt lat='0' lon='0'><time>\(text)</time></wpt></gpx>")
        let time = try #require(document.waypoints.first?.time)
        #expect(time.microseconds - utc(march15, 12, 0, 0).microseconds == Int64((fraction * 1e6).rounded()))
    }

    @Test(arguments: [
        "2024-03-15 12:00:00Z", "2024-03-15T12:00Z", "2024-02-30T12:00:00Z", "2024-03-15T24:00:00Z",
        "2024-03-15T12:60:00Z", "2024-03-15T12:00:60Z", "2024-03-15T12:00:00.Z", "2024-03-15T12:00:00+0200",
        "2024-03-15T12:00:00+15:00", "24-03-15T12:00:00Z", "2024-03-15T12:00:00Zjunk", "", "yesterday",
        "0000-01-01T00:00:00Z",
    ])
    func rejectsBadTimes(text: String) {
        let error = gpxError("<gpx>\n<wpt lat='0' lon='0'>\n<time>\(text)</time></wpt></gpx>")
        #expect(error == GPXError(line: 3, reason: .invalidTime(text)))
    }

    @Test func reportsPointErrorsWithTheirLine() {
        #expect(
            gpxError("<gpx>\n\n<trkpt lon='1'/></gpx>")
                == GPXError(line: 3, reason: .missingAttribute(element: "trkpt", attribute: "lat")))
        #expect(
            gpxError("<gpx><rtept lat='1'/></gpx>")
                == GPXError(line: 1, reason: .missingAttribute(element: "rtept", attribute: "lon")))
        #expect(
            gpxError("<gpx><wpt lat='90.5' lon='1'/></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "lat", value: "90.5")))
        #expect(
            gpxError("<gpx><wpt lat='1' lon='-180.01'/></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "lon", value: "-180.01")))
        #expect(
            gpxError("<gpx><wpt lat='1e1' lon='1'/></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "lat", value: "1e1")))
        #expect(
            gpxError("<gpx><wpt lat='' lon='1'/></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "lat", value: "")))
        #expect(
            gpxError("<gpx><wpt lat='1' lon='1'>\n<ele>high</ele></wpt></gpx>")
                == GPXError(line: 2, reason: .invalidValue(field: "ele", value: "high")))
        #expect(
            gpxError("<gpx><wpt lat='1' lon='1'><ele></ele></wpt></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "ele", value: "")))
        #expect(
            gpxError("<gpx><wpt lat='1' lon='1'><speed>-1</speed></wpt></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "speed", value: "-1")))
        #expect(
            gpxError("<gpx><wpt lat='1' lon='1'><course>361</course></wpt></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "course", value: "361")))
        #expect(
            gpxError("<gpx><wpt lat='1' lon='1'><hdop>-2</hdop></wpt></gpx>")
                == GPXError(line: 1, reason: .invalidValue(field: "hdop", value: "-2")))
        let long = String(repeating: "9", count: 100_000)
        let error = gpxError("<gpx><wpt lat='\(long)' lon='1'/></gpx>")
        #expect(
            error
                == GPXError(
                    line: 1, reason: .invalidValue(field: "lat", value: String(repeating: "9", count: 40) + "...")))
    }

    @Test(arguments: [
        ("", 1), ("   \n", 2), ("<gpx>", 1), ("<gpx><trk></gpx>", 1), ("<gpx></trk>", 1), ("</gpx>", 1),
        ("<gpx></gpx><gpx></gpx>", 1), ("<gpx></gpx>\njunk", 2), ("junk<gpx></gpx>", 1), ("<gpx>\n<!-- open", 2),
        ("<gpx><![CDATA[x</gpx>", 1), ("<gpx>&nbsp;</gpx>", 1), ("<gpx>a & b</gpx>", 1), ("<gpx>&#0;</gpx>", 1),
        ("<gpx>&#x110000;</gpx>", 1), ("<gpx>&#12a;</gpx>", 1), ("<gpx a='1'b='2'></gpx>", 1),
        ("<gpx a='1' a='2'></gpx>", 1),
        ("<gpx a=1></gpx>", 1), ("<gpx a='<'></gpx>", 1), ("<gpx a='1></gpx>", 1), ("<gpx\n<trk>", 2), ("<1gpx/>", 1),
        ("<gpx/ >", 1), ("<gpx><?pi unterminated</gpx>", 1), ("<gpx><!ELEMENT x></gpx>", 1), ("<!DOCTYPE gpx [", 1),
        ("<gpx><wpt lat='1' lon='1'><ele>1<b/></ele></wpt></gpx>", 1), ("<gpx></gpx  x>", 1),
    ])
    func rejectsMalformedXML(text: String, line: Int) {
        let error = gpxError(text)
        guard case .malformedXML = error?.reason else {
            Issue.record("expected malformed XML for \(text), got \(String(describing: error))")
            return
        }
        #expect(error?.line == line)
    }

    @Test func rejectsOtherRootElements() {
        #expect(
            gpxError("<?xml version='1.0'?>\n<kml><Placemark/></kml>")
                == GPXError(line: 2, reason: .notGPX(rootElement: "kml")))
    }

    @Test func describesErrorsWithTheLine() {
        let error = GPXError(line: 7, reason: .missingAttribute(element: "trkpt", attribute: "lat"))
        #expect(error.description == "line 7: <trkpt> lacks its lat attribute")
        #expect(
            GPXError(line: 2, reason: .malformedXML("end tag </a> does not match <b>")).description
                == "line 2: malformed XML: end tag </a> does not match <b>")
    }

    @Test func parsesLargeInputsInLinearTime() throws {
        let point =
            "<trkpt lat=\"48.1\" lon=\"11.5\"><ele>500</ele><time>2024-03-15T12:00:00Z</time><!-- c --></trkpt>\n"
        let count = 50_000
        let text = "<gpx><trk><trkseg>\n" + String(repeating: point, count: count) + "</trkseg></trk></gpx>"
        let clock = ContinuousClock()
        let start = clock.now
        let document = try GPXDocument(parsing: text)
        let elapsed = clock.now - start
        #expect(document.trackPoints.count == count)
        #expect(elapsed < .seconds(20))
    }

    @Test func survivesPathologicalInputs() {
        let deep = String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000)
        #expect(gpxError("<gpx>" + deep + "</gpx>") == nil)
        #expect(gpxError("<gpx>" + String(repeating: "<a>", count: 100_000)) != nil)
        #expect(gpxError("<gpx>" + String(repeating: "&", count: 100_000)) != nil)
        #expect(gpxError("<gpx a='" + String(repeating: "x", count: 1_000_000)) != nil)
        #expect(gpxError(String(repeating: "<!--", count: 100_000)) != nil)
        let manyAttributes = (0..<100_000).map { "a\($0)='\($0)'" }.joined(separator: " ")
        #expect(gpxError("<gpx \(manyAttributes)></gpx>") == nil)
        var random = SeededGenerator(state: 3)
        let base = Array(GPXDocumentTests.gpx11.utf8)
        for _ in 0..<2_000 {
            var bytes = base
            for _ in 0..<3 {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] = Array("<>/&;'\"=!?[]-x \n".utf8).randomElement(using: &random)!
            }
            _ = gpxError(String(decoding: bytes, as: UTF8.self))
        }
    }
}
