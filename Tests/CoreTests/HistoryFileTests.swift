import Testing
import WhereaboutsCore

/// The history file's text: read back as written, strict about every field, a torn last line dropped alone, and
/// never longer than its reader accepts.
@Suite("History: the file format")
struct HistoryFileTests {
    static let now = WallTime(microseconds: 1_700_000_000_000_000)

    static let entries: [HistoryEntry] = [
        .use(
            AppUse(
                app: "flatpak:org.gnome.Maps", started: now.advanced(by: .seconds(-600)),
                stopped: now.advanced(by: .seconds(-10)),
                level: .exact, approximate: false, providers: [.wifi, .gpsd])),
        .lookup(
            NetworkLookup(
                time: now.advanced(by: .seconds(-5)), kind: .wifi, host: "api.beacondb.net", accessPoints: 12, cells: 1,
                outcome: .position(accuracy: 35.5), apps: ["flatpak:org.gnome.Maps", "claimed:a\tb\\c"])),
        .lookup(
            NetworkLookup(
                time: now, kind: .ip, host: "127.0.0.1", accessPoints: 0, cells: 0, outcome: .failed, apps: [])),
        .use(
            AppUse(
                app: "claimed:firefox", started: now, stopped: now, level: .city, approximate: true, providers: [])),
    ]

    @Test func whatIsWrittenReadsBack() throws {
        let text = HistoryFile.serialize(Self.entries)
        let content = try HistoryFile.parse(text, now: Self.now)
        #expect(content.entries == Self.entries && content.lines == 4 && !content.tornLine)
        // Appended lines read as the whole file does.
        let appended = HistoryFile.serialize(Self.entries.prefix(2)) + HistoryFile.lines(of: Self.entries.dropFirst(2))
        #expect(appended == text)
    }

    @Test func aTornLastLineIsDroppedAlone() throws {
        let text = HistoryFile.serialize(Self.entries)
        let torn = text + "lookup\t17000000"
        let content = try HistoryFile.parse(torn, now: Self.now)
        #expect(content.entries == Self.entries && content.tornLine)
        // Even a torn line that would read as a whole one.
        let cut = String(text.dropLast())
        let shorter = try HistoryFile.parse(cut, now: Self.now)
        #expect(shorter.entries == Array(Self.entries.prefix(3)) && shorter.tornLine)
    }

    @Test func expiredLinesAreLeftOutWithoutError() throws {
        let later = Self.now.advanced(by: HistoryBook.maximumAge - .seconds(2))
        let content = try HistoryFile.parse(HistoryFile.serialize(Self.entries), now: later)
        #expect(content.entries == Array(Self.entries.suffix(2)) && content.lines == 4)
        #expect(content.oldestLine == Self.now.advanced(by: .seconds(-10)))
    }

    @Test(arguments: [
        ("", 1, "the first line"),
        ("# whereabouts history 2\n", 1, "the first line"),
        ("# whereabouts history 1\n\n", 2, "an empty line"),
        ("# whereabouts history 1\nvisit\t1\n", 2, "unknown line kind"),
        ("# whereabouts history 1\nuse\t1\t2\tclaimed:a\t8\texact\n", 2, "6 fields"),
        ("# whereabouts history 1\nuse\t2\t1\tclaimed:a\t8\texact\t-\n", 2, "invalid stopped"),
        ("# whereabouts history 1\nuse\t01\t2\tclaimed:a\t8\texact\t-\n", 2, "invalid started"),
        ("# whereabouts history 1\nuse\t1\t2\tclaimed:a\t3\texact\t-\n", 2, "invalid level"),
        ("# whereabouts history 1\nuse\t1\t2\tclaimed:a\t8\tfine\t-\n", 2, "invalid approximate"),
        ("# whereabouts history 1\nuse\t1\t2\tclaimed:a\t8\texact\twifi,gpsd\n", 2, "invalid providers"),
        ("# whereabouts history 1\nuse\t1\t2\tclaimed:a\t8\texact\tsonar\n", 2, "invalid providers"),
        ("# whereabouts history 1\nuse\t1\t2\t\t8\texact\t-\n", 2, "invalid app"),
        ("# whereabouts history 1\nuse\t1\t2\ta\\q\t8\texact\t-\n", 2, "invalid app"),
        ("# whereabouts history 1\nlookup\t1\twifi\th\t1\t0\tposition\tnan\n", 2, "invalid accuracy"),
        ("# whereabouts history 1\nlookup\t1\twifi\th\t1\t0\tnot-found\t3.0\n", 2, "invalid outcome"),
        ("# whereabouts history 1\nlookup\t1\tsonar\th\t1\t0\tfailed\t-\n", 2, "invalid kind"),
        ("# whereabouts history 1\nlookup\t1\twifi\th\t-1\t0\tfailed\t-\n", 2, "invalid access points"),
        ("# whereabouts history 1\nlookup\t1\twifi\th\t1\t0\tfailed\t-\tb\ta\n", 2, "invalid apps"),
        ("# whereabouts history 1\nlookup\t1\twifi\th\t1\t0\tfailed\t-\ta\tb\tc\td\te\n", 2, "13 fields"),
    ])
    func aBadLineRefusesTheFileNamingIt(text: String, line: Int, problem: String) {
        #expect {
            try HistoryFile.parse(text, now: Self.now, file: "history.d/1000")
        } throws: { error in
            let error = error as! HistoryFileError
            return error.line == line && error.description.contains(problem)
                && error.description.hasPrefix("history.d/1000:")
        }
    }

    @Test func tooManyOrTooLongLinesAreRefused() {
        let line = HistoryFile.lines(of: Self.entries.prefix(1))
        let many = HistoryFile.header + "\n" + String(repeating: line, count: HistoryFile.maximumLines + 1)
        #expect(throws: HistoryFileError(file: "history", line: HistoryFile.maximumLines + 2, problem: .tooManyLines)) {
            try HistoryFile.parse(many, now: Self.now)
        }
        let long =
            HistoryFile.header + "\nuse\t1\t2\t" + String(repeating: "a", count: HistoryFile.maximumLineBytes) + "\n"
        #expect(throws: HistoryFileError(file: "history", line: 2, problem: .lineTooLong)) {
            try HistoryFile.parse(long, now: Self.now)
        }
    }

    /// The longest lines the service can write, as many as a file may hold, fit the size its reader accepts.
    @Test func theLargestFileTheWriterMakesIsOneTheReaderTakes() throws {
        let longest = String(repeating: "\\", count: 400)
        let lookup = HistoryEntry.lookup(
            NetworkLookup(
                time: WallTime(microseconds: Int64.max), kind: .submission, host: longest, accessPoints: Int.max,
                cells: Int.max, outcome: .position(accuracy: -Double.leastNormalMagnitude),
                apps: (0..<10).map { "\($0)" + longest }))
        let use = HistoryEntry.use(
            AppUse(
                app: longest, started: WallTime(microseconds: Int64.max), stopped: WallTime(microseconds: Int64.max),
                level: .neighborhood, approximate: true, providers: ProviderKind.allCases))
        for entry in [lookup, use] {
            #expect(HistoryFile.lines(of: [entry]).utf8.count < HistoryFile.maximumLineBytes)
        }
        let file = HistoryFile.serialize(Array(repeating: lookup, count: HistoryFile.maximumLines))
        #expect(file.utf8.count <= HistoryFile.fileSizeLimit)
    }

    @Test func aLookupIsSummarisedWithoutWhatItSent() throws {
        let body = IchnaeaQuery.geolocate(
            accessPoints: (0..<3).map { WiFiFixtures.accessPoint($0, -60) },
            cells: [try ServingCell(radio: .lte, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: 5, cellID: 7)])
        let request = HTTPRequest(url: "https://user:secret@api.example.net:8443/v1/geolocate?key=k", body: body)
        let answer = HTTPResponse(status: 200, body: Array(#"{"location":{"lat":1,"lng":2},"accuracy":1500}"#.utf8))
        let lookup = NetworkLookup(kind: .wifi, request: request, result: .success(answer), time: Self.now)
        #expect(lookup.host == "api.example.net" && lookup.accessPoints == 3 && lookup.cells == 1)
        #expect(lookup.outcome == .position(accuracy: 1500))
        let ip = NetworkLookup(
            kind: .ip, request: HTTPRequest(url: "http://[::1]:1/v1/geolocate", body: IchnaeaQuery.ip()),
            result: .failure(.unreachable("refused")), time: Self.now)
        #expect(ip.host == "::1" && ip.accessPoints == 0 && ip.cells == 0 && ip.outcome == .failed)
        let missing = NetworkLookup(
            kind: .cell, request: request, result: .success(HTTPResponse(status: 404, body: [])), time: Self.now)
        #expect(missing.outcome == .notFound)
    }
}
