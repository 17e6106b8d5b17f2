import TestBasics
import Testing
import WhereaboutsCore

/// Parses `text` as UTF-8.
private func parse(_ text: String, maximumDepth: Int = 32) throws(JSONError) -> JSONValue {
    try JSONValue.parse(Array(text.utf8), maximumDepth: maximumDepth)
}

/// The error parsing `bytes` throws, or nil when they parse.
private func parseError(_ bytes: [UInt8], maximumDepth: Int = 32) -> JSONError? {
    do {
        _ = try JSONValue.parse(bytes, maximumDepth: maximumDepth)
        return nil
    } catch {
        return error
    }
}

/// The error parsing `text` throws, or nil when it parses.
private func parseError(_ text: String, maximumDepth: Int = 32) -> JSONError? {
    parseError(Array(text.utf8), maximumDepth: maximumDepth)
}

@Suite("JSON parser")
struct JSONParserTests {
    @Test func readsEveryKindOfValue() throws {
        let value = try parse(
            #" { "a" : [1, -2.5, 3e2, true, false, null, "x"], "b": {}, "c": [], "d": {"e": {"f": 0}} } "#)
        #expect(
            value
                == .object([
                    "a": [1, -2.5, 300, true, false, .null, "x"], "b": .object([:]), "c": .array([]),
                    "d": ["e": ["f": 0]],
                ]))
        #expect(value["a"]?.arrayValue?.count == 7)
        #expect(value["d"]?["e"]?["f"]?.numberValue == 0)
        #expect(value["missing"] == nil)
        #expect(value["a"]?["not an object"] == nil)
    }

    @Test func readsScalarsAtTheTop() throws {
        #expect(try parse("true") == .bool(true))
        #expect(try parse("null") == .null)
        #expect(try parse("\t\r\n 42 \n") == .number(42))
        #expect(try parse(#""top""#) == .string("top"))
    }

    @Test func readsNumbersByTheGrammar() throws {
        #expect(try parse("0") == .number(0))
        #expect(try parse("-0").numberValue?.sign == .minus)
        #expect(try parse("0.5") == .number(0.5))
        #expect(try parse("-12.5e-1") == .number(-1.25))
        #expect(try parse("1E+2") == .number(100))
        #expect(try parse("1e-400") == .number(0))
        #expect(try parse("123456789012345678") == .number(123_456_789_012_345_680))
        #expect(try parse("-1.7976931348623157e308") == .number(-Double.greatestFiniteMagnitude))
    }

    @Test func refusesNumbersOutsideTheGrammar() {
        let cases: [(String, JSONError.Problem, Int)] = [
            ("01", .leadingZero, 0),
            ("-01", .leadingZero, 1),
            ("00", .leadingZero, 0),
            ("1.", .unexpectedEnd(expected: "a digit"), 2),
            ("1.e5", .unexpectedByte(UInt8(ascii: "e"), expected: "a digit"), 2),
            (".5", .unexpectedByte(UInt8(ascii: "."), expected: "a value"), 0),
            ("+1", .unexpectedByte(UInt8(ascii: "+"), expected: "a value"), 0),
            ("1e", .unexpectedEnd(expected: "a digit"), 2),
            ("1e+", .unexpectedEnd(expected: "a digit"), 3),
            ("-", .unexpectedEnd(expected: "a digit"), 1),
            ("-a", .unexpectedByte(UInt8(ascii: "a"), expected: "a digit"), 1),
            ("NaN", .unexpectedByte(UInt8(ascii: "N"), expected: "a value"), 0),
            ("Infinity", .unexpectedByte(UInt8(ascii: "I"), expected: "a value"), 0),
            ("-Infinity", .unexpectedByte(UInt8(ascii: "I"), expected: "a digit"), 1),
            ("nan", .unexpectedByte(UInt8(ascii: "a"), expected: "'null'"), 1),
            ("1e400", .numberOutOfRange, 0),
            ("[0, -1e999]", .numberOutOfRange, 4),
            ("0x10", .trailingData, 1),
            ("1 2", .trailingData, 2),
        ]
        for (text, problem, offset) in cases {
            #expect(parseError(text) == JSONError(offset: offset, problem: problem), "\(text)")
        }
    }

    @Test func readsEscapesIncludingSurrogatePairs() throws {
        #expect(try parse(#""\" \\ \/ \b \f \n \r \t""#) == .string("\" \\ / \u{8} \u{c} \n \r \t"))
        #expect(try parse(#""\u0041\u00e9\u20AC\u0000""#) == .string("Aé€\u{0}"))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""\uD83D\uDE00!""#) == .string("😀!"))
        #expect(try parse("\"é€😀 raw\"") == .string("é€😀 raw"))
    }

    @Test func refusesBadStrings() {
        let cases: [(String, JSONError.Problem, Int)] = [
            (#""abc"#, .unexpectedEnd(expected: "'\"'"), 4),
            ("\"a\nb\"", .controlCharacterInString(0x0a), 2),
            ("\"\t\"", .controlCharacterInString(0x09), 1),
            (#""\x""#, .invalidEscape(UInt8(ascii: "x")), 2),
            (#""\'""#, .invalidEscape(UInt8(ascii: "'")), 2),
            (#""\u12G4""#, .invalidUnicodeEscape, 5),
            (#""\u12""#, .invalidUnicodeEscape, 5),
            (#""\ud83d""#, .unpairedSurrogate(0xD83D), 1),
            (#""\ud83dx""#, .unpairedSurrogate(0xD83D), 1),
            (#""\ud83d\u0041""#, .unpairedSurrogate(0xD83D), 1),
            (#""\ude00""#, .unpairedSurrogate(0xDE00), 1),
            (#""ok\"#, .unexpectedEnd(expected: "an escape"), 4),
            ("'single'", .unexpectedByte(UInt8(ascii: "'"), expected: "a value"), 0),
        ]
        for (text, problem, offset) in cases {
            #expect(parseError(text) == JSONError(offset: offset, problem: problem), "\(text)")
        }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        let quote = UInt8(ascii: "\"")
        let cases: [[UInt8]] = [
            [0xC0, 0x80],  // overlong NUL
            [0xC1, 0xBF],  // overlong
            [0xE0, 0x80, 0x80],  // overlong three-byte
            [0xED, 0xA0, 0x80],  // encoded surrogate U+D800
            [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
            [0xF5, 0x80, 0x80, 0x80],  // no such lead byte
            [0x80],  // stray continuation
            [0xE2, 0x82],  // truncated €
            [0xE2, 0x28, 0xA1],  // bad continuation
            [0xFF],
        ]
        for sequence in cases {
            #expect(
                parseError([quote, UInt8(ascii: "a")] + sequence + [quote])
                    == JSONError(offset: 2, problem: .invalidUTF8), "\(sequence)")
        }
        // Valid sequences of every length, at the edges of Table 3-7.
        let valid: [[UInt8]] = [
            [0xC2, 0x80], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
        ]
        for sequence in valid {
            #expect(parseError([quote] + sequence + [quote]) == nil, "\(sequence)")
        }
        // Outside strings nothing but ASCII structure may stand: not even a byte order mark.
        #expect(
            parseError([0xEF, 0xBB, 0xBF] + Array("{}".utf8))
                == JSONError(offset: 0, problem: .unexpectedByte(0xEF, expected: "a value")))
    }

    @Test func refusesBadStructure() {
        let cases: [(String, JSONError.Problem, Int)] = [
            ("", .unexpectedEnd(expected: "a value"), 0),
            ("   ", .unexpectedEnd(expected: "a value"), 3),
            ("{} x", .trailingData, 3),
            ("{}}", .trailingData, 2),
            (#"{"a":1}garbage"#, .trailingData, 7),
            ("[1,]", .unexpectedByte(UInt8(ascii: "]"), expected: "a value"), 3),
            (#"{"a":1,}"#, .unexpectedByte(UInt8(ascii: "}"), expected: "a string key"), 7),
            (#"{"a" 1}"#, .unexpectedByte(UInt8(ascii: "1"), expected: "':'"), 5),
            ("{a:1}", .unexpectedByte(UInt8(ascii: "a"), expected: "a string key"), 1),
            ("[1 2]", .unexpectedByte(UInt8(ascii: "2"), expected: "',' or ']'"), 3),
            (#"{"a":1 "b":2}"#, .unexpectedByte(UInt8(ascii: "\""), expected: "',' or '}'"), 7),
            ("[1", .unexpectedEnd(expected: "',' or ']'"), 2),
            (#"{"a""#, .unexpectedEnd(expected: "':'"), 4),
            (#"{"a":"#, .unexpectedEnd(expected: "a value"), 5),
            ("tru", .unexpectedEnd(expected: "'true'"), 3),
            ("fals e", .unexpectedByte(UInt8(ascii: " "), expected: "'false'"), 4),
            (#"{"k":1,"k":2}"#, .duplicateKey("k"), 7),
            (#"[{"x":{"k":1,"j":2,"k":3}}]"#, .duplicateKey("k"), 19),
        ]
        for (text, problem, offset) in cases {
            #expect(parseError(text) == JSONError(offset: offset, problem: problem), "\(text)")
        }
    }

    @Test func boundsTheDepth() throws {
        let deepest = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(parseError(deepest) == nil)
        let tooDeep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(parseError(tooDeep) == JSONError(offset: 32, problem: .tooDeep(limit: 32)))
        let objects = String(repeating: #"{"a":"#, count: 3) + "1" + String(repeating: "}", count: 3)
        #expect(parseError(objects, maximumDepth: 3) == nil)
        #expect(parseError(objects, maximumDepth: 2) == JSONError(offset: 10, problem: .tooDeep(limit: 2)))
        #expect(try parse("7", maximumDepth: 0) == .number(7))
        #expect(parseError("[]", maximumDepth: 0) == JSONError(offset: 0, problem: .tooDeep(limit: 0)))
        // A huge limit counts as the safe one.
        let hundredThousand = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(
            parseError(hundredThousand, maximumDepth: 1_000_000)
                == JSONError(offset: 512, problem: .tooDeep(limit: 512)))
        let safest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(parseError(safest, maximumDepth: .max) == nil)
        #expect(
            parseError(String(repeating: "[", count: 100_000)) == JSONError(offset: 32, problem: .tooDeep(limit: 32)))
    }

    @Test func errorsSayWhatAndWhere() {
        #expect(parseError("[1,]")?.description == "at byte 3: ']' where a value was expected")
        #expect(parseError("\"\u{1}\"")?.description == "at byte 1: unescaped control character 0x01 in a string")
        #expect(parseError("1e400")?.description == "at byte 0: the number is too large")
        #expect(parseError(#""\ude00""#)?.description == "at byte 1: unpaired surrogate \\uDE00")
    }
}

@Suite("JSON serialiser")
struct JSONSerialiserTests {
    @Test func writesCompactTextWithSortedKeys() {
        let value: JSONValue = ["zeta": 1, "alpha": [true, .null, "x"], "Beta": ["b": 2, "a": 1], "": 0]
        #expect(value.serialized == #"{"":0,"Beta":{"a":1,"b":2},"alpha":[true,null,"x"],"zeta":1}"#)
        #expect(value.serializedBytes == Array(value.serialized.utf8))
    }

    @Test func writesNumbersSoTheyReadBack() {
        let cases: [(Double, String)] = [
            (-60, "-60"), (0, "0"), (-0.0, "-0"), (1_700_000_000_000, "1700000000000"), (0.1, "0.1"),
            (48.137154, "48.137154"), (1e-7, "1e-07"), (1.5e300, "1.5e+300"),
            (9_007_199_254_740_992, "9007199254740992"),
            (9_007_199_254_740_994, "9007199254740994"), (-9_223_372_036_854_774_784, "-9223372036854774784"),
            (1e300, "1e+300"), (-2.5, "-2.5"),
            (.nan, "null"), (.infinity, "null"), (-.infinity, "null"),
        ]
        for (number, text) in cases {
            #expect(JSONValue.number(number).serialized == text, "\(number)")
        }
    }

    @Test func escapesStrings() {
        let value = JSONValue.string("quote \" backslash \\ slash / \n\r\t\u{8}\u{c}\u{0}\u{1f} é😀")
        #expect(value.serialized == #""quote \" backslash \\ slash / \n\r\t\b\f\u0000\u001f é😀""#)
    }

    @Test func roundTripsValues() throws {
        let value: JSONValue = [
            "text": "line\nbreak \"quoted\" \u{7f} 😀", "numbers": [0, -0.0, 1, -1, 0.1, 1e-300, 123.456, 1e21],
            "nested": [["deep": [[[]]]], .object([:])], "flags": [true, false, .null],
        ]
        let reparsed = try JSONValue.parse(value.serializedBytes)
        #expect(reparsed == value)
        #expect(reparsed.serialized == value.serialized)
    }

    @Test func roundTripsRandomDoublesBitForBit() throws {
        var generator = SplitMix64(seed: 0x5EED)
        var checked = 0
        while checked < 5_000 {
            let number = Double(bitPattern: generator.next())
            guard number.isFinite else { continue }
            checked += 1
            let text = JSONValue.number(number).serialized
            let back = try #require(try JSONValue.parse(Array(text.utf8)).numberValue, "\(text)")
            #expect(back.bitPattern == number.bitPattern, "\(text)")
        }
    }

    @Test func literalsAndAccessors() {
        let value: JSONValue = ["n": 1.5, "i": 2, "s": "x", "b": false, "a": [1], "z": .null]
        #expect(value["n"]?.numberValue == 1.5)
        #expect(value["i"]?.numberValue == 2)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["b"]?.boolValue == false)
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["z"]?.isNull == true)
        #expect(value.objectValue?.count == 6)
        #expect(value["s"]?.numberValue == nil && value["n"]?.stringValue == nil)
        #expect(JSONValue.array([]).typeDescription == "an array" && JSONValue.null.typeDescription == "null")
    }
}
