import CGPSD
import Testing
import WhereaboutsCore

@testable import GPSD

/// `wb_parse_poll` on `text`'s bytes (no terminating NUL is passed); the fix is all NaN and zero unless filled.
func parsePoll(_ text: String) -> (result: Int32, fix: wb_gps_fix) { parsePoll(Array(text.utf8)) }

func parsePoll(_ bytes: [UInt8]) -> (result: Int32, fix: wb_gps_fix) {
    var fix = report(mode: -7, latitude: .nan, longitude: .nan)
    let result = bytes.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { wb_parse_poll($0.baseAddress, $0.count, &fix) }
    }
    return (result, fix)
}

/// gpsd 3.22's answer to ?POLL between two epochs, as it wrote it (the TPV is the epoch's own report).
let pollBetweenEpochs = """
    {"class":"POLL","time":"2026-11-30T17:15:04.164Z","active":1,"tpv":[{"class":"TPV","device":"/dev/pts/0",\
    "mode":3,"time":"2026-11-30T17:14:55.000Z","ept":0.005,"lat":46.000179867,"lon":7.000000000,"altHAE":592.3000,\
    "altMSL":545.4000,"alt":545.4000,"epv":33.120,"track":0.0000,"magtrack":2.1832,"magvar":2.2,"speed":10.001,\
    "climb":0.000,"epc":66.24,"geoidSep":46.900,"eph":17.100,"sep":34.200}],"gst":[{"class":"GST",\
    "device":"/dev/pts/0"}],"sky":[{"class":"SKY","device":"/dev/pts/0","vdop":1.44,"hdop":0.90,"pdop":1.80,\
    "nSat":0,"uSat":0}]}
    """

/// gpsd 3.22's answer while it held only the GGA of the next epoch: that epoch's time and position, a speed gpsd
/// derived from the move, no course.
let pollMidEpoch = """
    {"class":"POLL","time":"2026-11-30T17:15:04.871Z","active":1,"tpv":[{"class":"TPV","device":"/dev/pts/0",\
    "mode":3,"time":"2026-11-30T17:14:56.000Z","ept":0.005,"lat":46.000269800,"lon":7.000000000,"altHAE":592.3000,\
    "altMSL":545.4000,"alt":545.4000,"epv":33.120,"magvar":2.2,"speed":9.996,"climb":0.000,"epc":66.24,\
    "geoidSep":46.900,"eph":17.100,"sep":34.200}],"gst":[{"class":"GST","device":"/dev/pts/0"}],"sky":[{"class":"SKY",\
    "device":"/dev/pts/0","vdop":1.44,"hdop":0.90,"pdop":1.80,"nSat":0,"uSat":0}]}
    """

/// 2026-11-30T17:14:55Z in seconds since 1970.
let pollFixSeconds: Int64 = 1_796_058_895

/// A POLL whose only TPV has `members` (after its class).
func poll(tpv members: String, sky: String = "") -> String {
    ##"{"class":"POLL","time":"2026-11-30T17:15:04.164Z","active":1,"tpv":[{"class":"TPV","## + members + "}],"
        + #""sky":["# + sky + "]}"
}

/// The smallest POLL with a usable fix, with `time` as the TPV's time.
func poll(time: String) -> String { poll(tpv: #""mode":2,"time":"\#(time)","lat":1,"lon":2"#) }

@Suite("gpsd's answer to ?POLL")
struct GPSDPollTests {
    @Test func gpsdsAnswerBetweenEpochsGivesItsFix() throws {
        let (result, raw) = parsePoll(pollBetweenEpochs)
        #expect(result == 1)
        #expect(raw.mode == 3)
        #expect(raw.time_seconds == pollFixSeconds && raw.time_nanoseconds == 0)
        // Exactly the doubles the text denotes, as libgps gives them for the same epoch's TPV.
        #expect(raw.latitude == 46.000179867 && raw.longitude == 7)
        #expect(raw.altitude_msl == 545.4 && raw.altitude_hae == 592.3)
        #expect(raw.eph == 17.1 && raw.epv == 33.12 && raw.epx.isNaN && raw.epy.isNaN)
        #expect(raw.speed == 10.001 && raw.eps.isNaN && raw.track == 0 && raw.epd.isNaN)
        #expect(raw.climb == 0 && raw.epc == 66.24)
        #expect(raw.hdop == 0.9 && raw.vdop == 1.44)

        let fix = try #require(GPSDFix.fix(from: raw, receivedAt: received))
        #expect(fix.timestamp == WallTime(microseconds: pollFixSeconds * 1_000_000))
        #expect(fix.horizontalAccuracy == 17.1 && fix.speed == 10.001 && fix.course == 0)
        #expect(fix.description == "gpsd 3D fix")
    }

    @Test func aMidEpochAnswerGivesWhatGPSDHoldsOfThatEpochOnly() {
        let (result, raw) = parsePoll(pollMidEpoch)
        #expect(result == 1)
        #expect(raw.time_seconds == pollFixSeconds + 1)
        #expect(raw.latitude == 46.0002698 && raw.speed == 9.996)
        #expect(raw.track.isNaN, "no course before the epoch's RMC")
    }

    @Test func anAnswerWithoutAUsableFixGivesNone() {
        #expect(
            parsePoll(#"{"class":"POLL","time":"2026-11-30T17:15:04.164Z","active":0,"tpv":[],"gst":[],"sky":[]}"#)
                .result == 0)
        #expect(parsePoll(poll(tpv: #""mode":1,"time":"2026-11-30T17:14:55.000Z","lat":1,"lon":2"#)).result == 0)
        #expect(parsePoll(poll(tpv: #""mode":3,"lat":1,"lon":2"#)).result == 0, "no time")
        #expect(
            parsePoll(poll(tpv: #""mode":3,"time":"2026-11-30T17:14:55.000Z","lat":1"#)).result == 0, "no longitude")
        #expect(parsePoll(poll(tpv: #""time":"2026-11-30T17:14:55.000Z","lat":1,"lon":2"#)).result == 0, "no mode")
        #expect(parsePoll(poll(tpv: #""device":"/dev/ttyS0","mode":0"#)).result == 0)
    }

    @Test func anAnswerWithoutAUsableFixLeavesTheFixAlone() {
        let (result, raw) = parsePoll(poll(tpv: #""mode":1,"time":"2026-11-30T17:14:55.000Z","lat":1,"lon":2"#))
        #expect(result == 0 && raw.mode == -7 && raw.latitude.isNaN)
    }

    @Test func a2DFixHasNoAltitude() {
        let (result, raw) = parsePoll(
            poll(tpv: #""mode":2,"time":"2026-11-30T17:14:55.000Z","lat":1,"lon":2,"altMSL":500,"altHAE":540"#))
        #expect(result == 1 && raw.mode == 2 && raw.altitude_msl.isNaN && raw.altitude_hae.isNaN)
    }

    @Test func ofSeveralDevicesTheNewestFixWinsWithItsOwnDevicesDOP() {
        let text = #"""
            {"class":"POLL","time":"2026-11-30T17:15:04.164Z","active":3,"tpv":[\#
            {"class":"TPV","device":"/dev/a","mode":3,"time":"2026-11-30T17:14:55.500Z","lat":10,"lon":20},\#
            {"class":"TPV","device":"/dev/b","mode":2,"time":"2026-11-30T17:14:55.750Z","lat":11,"lon":21},\#
            {"class":"TPV","device":"/dev/c","mode":1,"time":"2026-11-30T17:14:59.000Z"}],\#
            "sky":[{"class":"SKY","device":"/dev/a","hdop":1.1,"vdop":1.2},\#
            {"class":"SKY","device":"/dev/b","hdop":2.1,"vdop":2.2,"satellites":[{"PRN":4,"used":true}]}]}
            """#
        let (result, raw) = parsePoll(text)
        #expect(result == 1)
        #expect(raw.latitude == 11 && raw.longitude == 21 && raw.time_nanoseconds == 750_000_000)
        #expect(raw.hdop == 2.1 && raw.vdop == 2.2)
    }

    @Test func noSkyOfTheSameDeviceLeavesTheDOPUnknown() {
        let (result, raw) = parsePoll(
            poll(
                tpv: #""device":"/dev/a","mode":2,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#,
                sky: #"{"class":"SKY","device":"/dev/b","hdop":1.5}"#))
        #expect(result == 1 && raw.hdop.isNaN && raw.vdop.isNaN)
    }

    @Test func membersComeInAnyOrderWithSpaceBetween() {
        let text = """
             { "tpv" : [ { "lon" : 2.5 , "time" : "2026-11-30T17:14:55.25Z" , "class" : "TPV" , "mode" : 2 ,
            "lat" : -1.5e0 } ] ,\t"class":"POLL" }\r
            """
        let (result, raw) = parsePoll(text)
        #expect(result == 1 && raw.latitude == -1.5 && raw.longitude == 2.5 && raw.time_nanoseconds == 250_000_000)
    }

    @Test func unknownMembersOfAnyShapeArePassedOver() {
        let text = poll(
            tpv:
                #""mode":2,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2,"status":2,"x":[null,true,false,"\u00e9\n",{"y":[[]]}],"ecefx":-1.2E+3"#
        )
        #expect(parsePoll(text).result == 1)
    }

    @Test func onlyTheGivenLengthIsRead() {
        let text = Array(poll(time: "2026-11-30T17:14:55Z").utf8)
        #expect(parsePoll(text + Array("garbage".utf8)).result == -1)
        let (result, raw) = (text + Array("garbage".utf8)).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { bytes in
                var fix = wb_gps_fix()
                return (wb_parse_poll(bytes.baseAddress, text.count, &fix), fix)
            }
        }
        #expect(result == 1 && raw.latitude == 1)
    }

    @Test(arguments: [
        ("2026-11-30T17:14:55Z", Int64(1_796_058_895), Int64(0)),
        ("2026-11-30T17:14:55.1Z", 1_796_058_895, 100_000_000),
        ("2026-11-30T17:14:55.123456789Z", 1_796_058_895, 123_456_789),
        ("1970-01-01T00:00:01.000Z", 1, 0),
        ("2000-02-29T12:00:00Z", 951_825_600, 0),
        ("2016-12-31T23:59:60Z", 1_483_228_800, 0),
        ("9999-12-31T23:59:59Z", 253_402_300_799, 0),
    ])
    func timesAreUTC(text: String, seconds: Int64, nanoseconds: Int64) {
        let (result, raw) = parsePoll(poll(time: text))
        #expect(result == 1)
        #expect(raw.time_seconds == seconds && raw.time_nanoseconds == nanoseconds, "\(text)")
    }

    @Test(arguments: [
        "2026-11-30T17:14:55", "2026-11-30T17:14:55+00:00", "2026-11-30 17:14:55Z", "2026-11-30T17:14:55.Z",
        "2026-11-30T17:14:55.1234567891Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-11-31T00:00:00Z",
        "2025-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T23:60:00Z",
        "2026-11-30T23:59:61Z", "1969-12-31T23:59:59Z", "+2026-11-30T17:14:55Z", "2026-1-30T17:14:55Z",
        "2026-11-30T17:14:55Zx", "２026-11-30T17:14:55Z", "2026-11-30T17:14:55\\u005a", "",
    ])
    func malformedTimesAreRefused(text: String) {
        #expect(parsePoll(poll(time: text)).result == -1, "\(text)")
    }

    @Test(arguments: [
        // Not a POLL.
        #"{"class":"TPV","mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2}"#,
        #"{"class":"SKY","hdop":1}"#,
        #"{"tpv":[{"class":"TPV","mode":2,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2}]}"#,
        #"{"class":"POLL"}"#,
        #"{"class":"POLL","tpv":{}}"#,
        #"{"class":"POLL","tpv":[{"mode":2,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2}]}"#,
        #"{"class":"POLL","tpv":[{"class":"SKY"}]}"#,
        #"{"class":"POLL","tpv":[],"sky":[{"class":"TPV"}]}"#,
        #"{"class":"POLL","tpv":[3]}"#,
        #"{"class":"poll","tpv":[]}"#,
        #"{"class":"POLL","class":"POLL","tpv":[]}"#,
        #"{"class":"POLL","tpv":[],"tpv":[]}"#,
        #"{"class":"P\u004fLL","tpv":[]}"#,
        #"{"cl\u0061ss":"POLL","tpv":[]}"#,
        // Not JSON.
        "", " ", "{", "}", "[]", "null", #"{"class":"POLL","tpv":[]"#, #"{"class":"POLL","tpv":[],}"#,
        #"{"class":"POLL","tpv":[,]}"#, #"{"class":"POLL" "tpv":[]}"#, #"{"class":"POLL","tpv":[]}}"#,
        #"{"class":"POLL","tpv":[]} {}"#, #"{'class':'POLL','tpv':[]}"#, #"{class:"POLL","tpv":[]}"#,
        #"{"class":"POLL","tpv":[],"x":tru}"#, #"{"class":"POLL","tpv":[],"x":True}"#,
        #"{"class":"POLL","tpv":[],"x":"\x"}"#, #"{"class":"POLL","tpv":[],"x":"\u12"}"#,
        #"{"class":"POLL","tpv":[],"x":"\ud800"}"#, #"{"class":"POLL","tpv":[],"x":"\udc00\ud800"}"#,
        #"{"class":"POLL","tpv":[],"x":"\ud800\u0041"}"#, "{\"class\":\"POLL\",\"tpv\":[],\"x\":\"a\tb\"}",
        "{\"class\":\"POLL\",\"tpv\":[],\"x\":\"a\u{0}b\"}", "\u{FEFF}{\"class\":\"POLL\",\"tpv\":[]}",
        // Numbers JSON does not have, or that are not finite.
        #"{"class":"POLL","tpv":[],"x":01}"#, #"{"class":"POLL","tpv":[],"x":1.}"#,
        #"{"class":"POLL","tpv":[],"x":.5}"#,
        #"{"class":"POLL","tpv":[],"x":+1}"#, #"{"class":"POLL","tpv":[],"x":-}"#, #"{"class":"POLL","tpv":[],"x":1e}"#,
        #"{"class":"POLL","tpv":[],"x":NaN}"#, #"{"class":"POLL","tpv":[],"x":Infinity}"#,
        #"{"class":"POLL","tpv":[],"x":1e999}"#, #"{"class":"POLL","tpv":[],"x":0x10}"#,
        #"{"class":"POLL","tpv":[],"x":1234567890123456789012345678901234567890.5}"#,
    ])
    func anythingButAWellFormedPOLLIsRefused(text: String) {
        let (result, raw) = parsePoll(text)
        #expect(result == -1, "\(text)")
        #expect(raw.mode == -7, "the fix was written to")
    }

    @Test(arguments: [
        #""mode":3,"mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lat":1,"lon":2"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","time":"2026-11-30T17:14:56Z","lat":1,"lon":2"#,
        #""mode":"3","time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#,
        #""mode":4,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#,
        #""mode":-1,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#,
        #""mode":2.5,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#,
        #""mode":3,"time":1796058895,"lat":1,"lon":2"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","lat":"1","lon":2"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lon":null"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2,"speed":true"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2,"device":7"#,
        #""mode":3,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2,"class":"TPV""#,
    ])
    func aKnownTPVMemberTwiceOrOfTheWrongTypeIsRefused(members: String) {
        #expect(parsePoll(poll(tpv: members)).result == -1, "\(members)")
    }

    @Test func skyMembersAreCheckedToo() {
        let tpv = #""mode":2,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2"#
        #expect(parsePoll(poll(tpv: tpv, sky: #"{"class":"SKY","hdop":"1"}"#)).result == -1)
        #expect(parsePoll(poll(tpv: tpv, sky: #"{"class":"SKY","vdop":1,"vdop":2}"#)).result == -1)
        #expect(parsePoll(poll(tpv: tpv, sky: #"{"hdop":1}"#)).result == -1)
    }

    @Test func nestingIsLimited() {
        func nested(_ depth: Int) -> String {
            poll(
                tpv: #""mode":2,"time":"2026-11-30T17:14:55Z","lat":1,"lon":2,"x":"#
                    + String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        }
        // The POLL object, its tpv list and the TPV object are three levels.
        #expect(parsePoll(nested(13)).result == 1)
        #expect(parsePoll(nested(14)).result == -1)
        #expect(parsePoll(nested(100_000)).result == -1)
    }

    @Test func listsOfMoreEntriesThanGPSDHasDevicesAreRefused() {
        let entry = #"{"class":"TPV","mode":1}"#
        func list(_ count: Int) -> String {
            #"{"class":"POLL","tpv":["# + Array(repeating: entry, count: count).joined(separator: ",") + "]}"
        }
        #expect(parsePoll(list(16)).result == 0)
        #expect(parsePoll(list(17)).result == -1)
    }

    @Test func stringsMayHoldAnyWellFormedUTF8AndNothingElse() {
        func with(_ bytes: [UInt8]) -> Int32 {
            let prefix = Array(#"{"class":"POLL","tpv":[],"x":""#.utf8)
            return parsePoll(prefix + bytes + Array(#""}"#.utf8)).result
        }
        #expect(with(Array("é€𝄞 \\u00e9 \\ud834\\udd1e \\\" \\\\ \\/ \\b\\f\\n\\r\\t".utf8)) == 0)
        for bad: [UInt8] in [
            [0x80], [0xC0, 0xAF], [0xC1, 0x81], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF0, 0x80, 0x80, 0xAF],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xE2, 0x82], [0xC3], [0x7F + 1, 0x41],
        ] {
            #expect(with(bad) == -1, "\(bad)")
        }
    }

    @Test func everyCutShortAnswerIsRefused() {
        let bytes = Array(pollBetweenEpochs.utf8)
        for length in 0..<bytes.count {
            #expect(parsePoll(Array(bytes[..<length])).result == -1, "cut at \(length)")
        }
    }

    @Test func garbledAnswersAreRefusedOrReadWithoutHarm() {
        // Byte changes, insertions and deletions at pseudo-random places of a real answer: whatever the outcome,
        // a fix comes out only with a usable position and time.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(truncatingIfNeeded: state >> 1)
        }
        let original = Array(pollBetweenEpochs.utf8)
        var outcomes: [Int32: Int] = [:]
        for _ in 0..<20_000 {
            var bytes = original
            for _ in 0...(next() % 4) {
                let at = next() % bytes.count
                switch next() % 3 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: next())
                case 1: bytes.insert(UInt8(truncatingIfNeeded: next()), at: at)
                default: bytes.remove(at: at)
                }
            }
            let (result, raw) = parsePoll(bytes)
            outcomes[result, default: 0] += 1
            #expect(result >= -1 && result <= 1)
            if result == 1 {
                #expect(raw.mode >= 2 && raw.mode <= 3 && raw.latitude.isFinite && raw.longitude.isFinite)
                #expect(raw.time_seconds > 0 && raw.time_nanoseconds >= 0 && raw.time_nanoseconds < 1_000_000_000)
            } else {
                #expect(raw.mode == -7)
            }
        }
        #expect(outcomes[-1, default: 0] > 0 && outcomes[1, default: 0] > 0)
    }
}
