import Testing
import WhereaboutsCore

/// Interprets an answer with `status` and `body`.
private func interpret(_ status: Int, _ body: String, _ kind: QueryKind = .wifi) -> IchnaeaOutcome {
    IchnaeaOutcome.interpret(HTTPResponse(status: status, body: Array(body.utf8)), kind: kind)
}

/// The reason a malformed outcome gives, or nil for any other outcome.
private func reason(_ outcome: IchnaeaOutcome) -> String? {
    guard case .malformed(let reason) = outcome else { return nil }
    return reason
}

@Suite("Ichnaea answers")
struct IchnaeaAnswerTests {
    @Test func aPositionIsRead() {
        #expect(
            interpret(200, #"{"location":{"lat":48.137154,"lng":11.576124},"accuracy":35}"#)
                == .position(latitude: 48.137154, longitude: 11.576124, accuracy: 35))
        // Unknown members are ignored, whitespace and order are free, and the limits are inclusive.
        #expect(
            interpret(200, #" {"accuracy": 9.5, "license": "CC0", "location": {"lng": -180, "lat": 90, "alt": 3}} "#)
                == .position(latitude: 90, longitude: -180, accuracy: 9.5))
        #expect(
            interpret(200, #"{"location":{"lat":-90,"lng":180},"accuracy":20000000}"#, .ip)
                == .position(latitude: -90, longitude: 180, accuracy: 20_000_000))
    }

    @Test func aFallbackIsNeverAWiFiFix() {
        let body = #"{"location":{"lat":52.5,"lng":13.4},"accuracy":25000,"fallback":"ipf"}"#
        #expect(reason(interpret(200, body)) == "the server answered from a fallback (ipf) although none was allowed")
        let small = #"{"location":{"lat":52.5,"lng":13.4},"accuracy":50,"fallback":"lacf"}"#
        #expect(reason(interpret(200, small))?.contains("fallback (lacf)") == true)
        #expect(reason(interpret(200, #"{"location":{"lat":1,"lng":2},"accuracy":50,"fallback":null}"#)) != nil)
        // On an IP query the fallback is what was asked for.
        #expect(interpret(200, body, .ip) == .position(latitude: 52.5, longitude: 13.4, accuracy: 25_000))
    }

    @Test func aWiFiAnswerOfKilometresIsNoWiFiFix() {
        let body = #"{"location":{"lat":52.5,"lng":13.4},"accuracy":25000}"#
        #expect(reason(interpret(200, body))?.hasPrefix("accuracy 25000 m is not a Wi-Fi position") == true)
        #expect(interpret(200, body, .ip) == .position(latitude: 52.5, longitude: 13.4, accuracy: 25_000))
        #expect(
            interpret(200, #"{"location":{"lat":52.5,"lng":13.4},"accuracy":10000}"#)
                == .position(latitude: 52.5, longitude: 13.4, accuracy: 10_000))
    }

    @Test func aCellAnswerMayComeFromTheCellAreaButNotFromTheAddress() {
        let area = #"{"location":{"lat":52.5,"lng":13.4},"accuracy":120000,"fallback":"lacf"}"#
        #expect(interpret(200, area, .cells) == .position(latitude: 52.5, longitude: 13.4, accuracy: 120_000))
        #expect(
            interpret(200, #"{"location":{"lat":52.5,"lng":13.4},"accuracy":2500}"#, .cells)
                == .position(latitude: 52.5, longitude: 13.4, accuracy: 2_500))
        let address = #"{"location":{"lat":52.5,"lng":13.4},"accuracy":25000,"fallback":"ipf"}"#
        #expect(
            reason(interpret(200, address, .cells))
                == "the server answered from a fallback (ipf) although only the cell area one (lacf) was allowed")
        #expect(reason(interpret(200, #"{"location":{"lat":1,"lng":2},"accuracy":50,"fallback":7}"#, .cells)) != nil)
        #expect(
            interpret(200, #"{"location":{"lat":52.5,"lng":13.4},"accuracy":500000}"#, .cells)
                == .position(latitude: 52.5, longitude: 13.4, accuracy: 500_000))
        #expect(
            reason(interpret(200, #"{"location":{"lat":52.5,"lng":13.4},"accuracy":500001}"#, .cells))?
                .hasPrefix("accuracy 500001 m is not a cell position") == true)
        // A Wi-Fi query still allows no fallback at all.
        #expect(reason(interpret(200, area))?.contains("although none was allowed") == true)
    }

    @Test func aBadPositionIsMalformedNamingTheField() {
        let cases: [(String, String)] = [
            (#"{"location":{"lat":90.5,"lng":0},"accuracy":10}"#, "location.lat 90.5 is out of range"),
            (#"{"location":{"lat":-91,"lng":0},"accuracy":10}"#, "location.lat -91 is out of range"),
            (#"{"location":{"lat":0,"lng":180.001},"accuracy":10}"#, "location.lng 180.001 is out of range"),
            (#"{"location":{"lat":0,"lng":0},"accuracy":0}"#, "accuracy is 0"),
            (#"{"location":{"lat":0,"lng":0},"accuracy":-1}"#, "accuracy -1 is out of range"),
            (#"{"location":{"lat":0,"lng":0},"accuracy":20000001}"#, "accuracy 20000001 is out of range"),
            (#"{"location":{"lat":"48.1","lng":0},"accuracy":10}"#, "location.lat is a string, not a number"),
            (#"{"location":{"lat":48,"lng":null},"accuracy":10}"#, "location.lng is null, not a number"),
            (#"{"location":{"lat":48,"lng":11},"accuracy":[10]}"#, "accuracy is an array, not a number"),
            (#"{"location":{"lng":11},"accuracy":10}"#, "location.lat is missing"),
            (#"{"location":{"lat":11},"accuracy":10}"#, "location.lng is missing"),
            (#"{"location":{"lat":48,"lng":11}}"#, "accuracy is missing"),
            (#"{"accuracy":10}"#, "the answer has no location"),
            (#"{"location":[48,11],"accuracy":10}"#, "location is an array, not an object"),
            (#"{"error":{"message":"odd"}}"#, "the answer has no location"),
            (#"[1,2]"#, "the answer is an array, not an object"),
            (#""ok""#, "the answer is a string, not an object"),
        ]
        for (body, expected) in cases {
            #expect(reason(interpret(200, body, .ip)) == expected, "\(body)")
        }
    }

    @Test func aBodyThatIsNotJSONIsMalformed() {
        #expect(
            reason(interpret(200, "")) == "the answer is not JSON: at byte 0: the text ends where a value was expected")
        #expect(
            reason(interpret(200, "<html>portal login</html>"))?.hasPrefix("the answer is not JSON: at byte 0") == true)
        #expect(reason(interpret(200, #"{"location":{"lat":NaN,"lng":0},"accuracy":1}"#))?.contains("byte 19") == true)
        #expect(
            reason(interpret(200, #"{"location":{"lat":1,"lng":0},"accuracy":1} trailing"#))?.contains("more follows")
                == true)
    }

    @Test func notFoundIsNotFoundWhateverTheBody() {
        let ichnaea =
            #"{"error":{"errors":[{"domain":"geolocation","reason":"notFound","message":"Not found"}],"code":404,"message":"Not found"}}"#
        #expect(interpret(404, ichnaea) == .notFound)
        #expect(interpret(404, "") == .notFound)
        #expect(interpret(404, "<h1>nope</h1>", .ip) == .notFound)
    }

    @Test func refusalsCarryIchnaeasReason() {
        let keyInvalid =
            #"{"error":{"errors":[{"domain":"usageLimits","reason":"keyInvalid","message":"Missing or invalid API key."}],"code":400,"message":"Invalid API key"}}"#
        #expect(interpret(400, keyInvalid) == .refused(status: 400, message: "keyInvalid: Invalid API key"))
        let daily =
            #"{"error":{"errors":[{"domain":"usageLimits","reason":"dailyLimitExceeded","message":"You have exceeded your daily limit."}],"code":403,"message":"You have exceeded your daily limit."}}"#
        #expect(
            interpret(403, daily)
                == .refused(status: 403, message: "dailyLimitExceeded: You have exceeded your daily limit."))
        #expect(
            interpret(401, #"{"error":{"message":"Unauthorized"}}"#) == .refused(status: 401, message: "Unauthorized"))
        #expect(
            interpret(400, #"{"error":{"errors":[{"reason":"parseError"}]}}"#)
                == .refused(status: 400, message: "parseError"))
        #expect(
            interpret(400, #"{"error":{"errors":[{"reason":"same"}],"message":"same"}}"#)
                == .refused(status: 400, message: "same"))
        #expect(interpret(410, #"{"error":"gone for good"}"#) == .refused(status: 410, message: "gone for good"))
        #expect(interpret(418, "") == .refused(status: 418, message: ""))
        #expect(
            interpret(403, "<html>\n<title>403 Forbidden</title>\n</html>")
                == .refused(status: 403, message: "<html> <title>403 Forbidden</title> </html>"))
    }

    @Test func messagesAreCleanedAndCut() {
        let noisy = "line one\nline two\r\n\u{1b}[31mred\u{1b}[0m\u{7}\u{85}tab\there\u{2028}end"
        let body = JSONValue.object(["error": ["message": .string(noisy)]]).serialized
        #expect(interpret(400, body) == .refused(status: 400, message: "line one line two [31mred [0m tab here end"))
        let long = JSONValue.object(["error": ["message": .string(String(repeating: "é", count: 500))]]).serialized
        guard case .serverTrouble(_, let message) = interpret(503, long) else {
            Issue.record("not server trouble")
            return
        }
        #expect(message == String(repeating: "é", count: 200))
        let rawLong = String(repeating: "x", count: 10_000)
        #expect(interpret(502, rawLong) == .serverTrouble(status: 502, message: String(repeating: "x", count: 200)))
    }

    @Test func serverTroubleAndOtherStatuses() {
        #expect(interpret(500, "") == .serverTrouble(status: 500, message: ""))
        #expect(
            interpret(503, #"{"error":{"message":"Service Unavailable"}}"#)
                == .serverTrouble(status: 503, message: "Service Unavailable"))
        #expect(interpret(599, "x") == .serverTrouble(status: 599, message: "x"))
        #expect(interpret(429, "slow down") == .serverTrouble(status: 429, message: "slow down"))
        for status in [0, 100, 201, 204, 301, 302, 304, 600, -1] {
            #expect(
                interpret(status, #"{"location":{"lat":1,"lng":2},"accuracy":3}"#)
                    == .malformed("unexpected HTTP status \(status)"))
        }
    }
}
