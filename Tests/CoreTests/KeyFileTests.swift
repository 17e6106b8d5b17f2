import Testing
import WhereaboutsCore

private func parse(_ text: String) throws -> KeyFile {
    try KeyFile(parsing: text, file: "test.conf")
}

/// The error that parsing `text` throws, or nil when it parses.
private func parseError(_ text: String) -> KeyFileError? {
    do {
        _ = try KeyFile(parsing: text, file: "test.conf")
        return nil
    } catch {
        return error
    }
}

/// The error that `read` throws on the key file of `text`, or nil when it succeeds.
private func valueError<T>(_ text: String, _ read: (KeyFile) throws(KeyFileError) -> T) throws -> KeyFileError? {
    let keyFile = try parse(text)
    do {
        _ = try read(keyFile)
        return nil
    } catch {
        return error
    }
}

@Suite struct KeyFileSyntaxTests {
    @Test func groupsEntriesAndLineNumbers() throws {
        let keyFile = try parse(
            """
            # leading comment
            [agent]
            whitelist=gnome-shell;lipstick

            [wifi]
            enable=true
            url=https://api.beacondb.net/v1/geolocate
            """)
        #expect(keyFile.file == "test.conf")
        #expect(keyFile.groups.map(\.name) == ["agent", "wifi"])
        #expect(keyFile.groups.map(\.line) == [2, 5])
        #expect(
            keyFile.entry("whitelist", in: "agent") == .init(key: "whitelist", value: "gnome-shell;lipstick", line: 3))
        #expect(keyFile.group("wifi")?.entries.map(\.key) == ["enable", "url"])
        #expect(keyFile.entry("url", in: "wifi")?.line == 7)
        #expect(keyFile.group("3g") == nil)
        #expect(keyFile.entry("url", in: "agent") == nil)
    }

    @Test func emptyAndCommentOnlyTextsHaveNoGroups() throws {
        #expect(try parse("").groups.isEmpty)
        #expect(try parse("\n\n   \n\t\n").groups.isEmpty)
        #expect(try parse("# just\n   # comments\n#[agent]\n").groups.isEmpty)
    }

    @Test func onlyHashStartsAComment() throws {
        let keyFile = try parse("[g]\n  # indented comment\n# a=b\nkey=value # not a comment\n")
        #expect(keyFile.group("g")?.entries == [.init(key: "key", value: "value # not a comment", line: 4)])

        // GLib does not treat ';' as a comment: without '=' the line is malformed...
        let error = try #require(parseError("[g]\n; a comment in other INI dialects\n"))
        #expect(error.line == 2)
        #expect(error.problem == .malformedLine("; a comment in other INI dialects"))
        // ...and with '=' it is a key.
        #expect(try parse("[g]\n;key=1\n").entry(";key", in: "g")?.value == "1")
    }

    @Test func whitespaceAroundKeysAndValuesIsTrimmed() throws {
        let keyFile = try parse("  [g]  \t\n \t key one \t=\t  some value \t \nempty=\n blank =   \n")
        #expect(keyFile.entry("key one", in: "g")?.value == "some value")
        #expect(keyFile.entry("empty", in: "g")?.value == "")
        #expect(keyFile.entry("blank", in: "g")?.value == "")
    }

    @Test func valueKeepsEverythingAfterTheFirstEquals() throws {
        let keyFile = try parse("[wifi]\nurl=https://example.org/v1/geolocate?key=a=b\n")
        #expect(keyFile.entry("url", in: "wifi")?.value == "https://example.org/v1/geolocate?key=a=b")
    }

    @Test func crlfLineEndsReadLikeLF() throws {
        let crlf = try KeyFile(parsing: "[g]\r\na=1\r\n\r\n# c\r\nb = two \r\n", file: "crlf.conf")
        let lf = try KeyFile(parsing: "[g]\na=1\n\n# c\nb = two \n", file: "crlf.conf")
        #expect(crlf == lf)
        #expect(crlf.entry("b", in: "g") == .init(key: "b", value: "two", line: 5))
    }

    @Test func repeatedKeyKeepsLastValueAndLine() throws {
        let keyFile = try parse("[g]\na=1\nb=2\na=3\n")
        #expect(
            keyFile.group("g")?.entries == [.init(key: "a", value: "3", line: 4), .init(key: "b", value: "2", line: 3)])
    }

    @Test func repeatedGroupContinuesTheFirst() throws {
        let keyFile = try parse("[g]\na=1\n[h]\nx=0\n[g]\nb=2\na=5\n")
        #expect(keyFile.groups.map(\.name) == ["g", "h"])
        #expect(keyFile.group("g")?.line == 1)
        #expect(keyFile.group("g")?.entries.map(\.value) == ["5", "2"])
    }

    @Test func groupNamesAreTakenAsWritten() throws {
        let keyFile = try parse("[ spaced name ]\na=1\n[org.gnome.Shell]\n[café]\n")
        #expect(keyFile.groups.map(\.name) == [" spaced name ", "org.gnome.Shell", "café"])
    }

    @Test func localeSuffixedKeysAreAccepted() throws {
        let keyFile = try parse("[g]\nName[de_DE.UTF-8@euro]=Ort\nName[]=x\n")
        #expect(keyFile.entry("Name[de_DE.UTF-8@euro]", in: "g")?.value == "Ort")
        #expect(keyFile.entry("Name[]", in: "g")?.value == "x")
    }

    @Test func keyBeforeAnyGroupIsAnError() throws {
        let error = try #require(parseError("# header\n\nenable=true\n[g]\n"))
        #expect(error == KeyFileError(file: "test.conf", line: 3, key: "enable", problem: .keyOutsideGroup))
        #expect(error.description == "test.conf:3: key 'enable': key-value pair before the first [group] header")
    }

    @Test func malformedLinesNameTheirLine() throws {
        let error = try #require(parseError("[g]\na=1\njust some words\n"))
        #expect(error.line == 3)
        #expect(error.problem == .malformedLine("just some words"))
        #expect(error.description.hasPrefix("test.conf:3: 'just some words' is not"))

        #expect(parseError("[g]\n=value\n")?.problem == .malformedLine("=value"))
        #expect(parseError("[g]\n  = value\n")?.line == 2)
    }

    @Test(arguments: ["[agent", "[agent] x", "[agent]]", "[agent]=1", "[]x"])
    func malformedGroupHeaders(header: String) throws {
        let error = try #require(parseError("# c\n" + header + "\n"))
        #expect(error.line == 2)
        #expect(error.problem == .malformedGroupHeader(header))
        #expect(error.description.hasPrefix("test.conf:2: "))
    }

    @Test(arguments: ["[]", "[a[b]", "[tab\u{7}]"])
    func invalidGroupNames(header: String) throws {
        let error = try #require(parseError(header + "\n"))
        #expect(error.line == 1)
        #expect(error.problem == .invalidGroupName)
    }

    @Test(arguments: ["a]b", "a[b", "a[de]x", "a[d e]", "a[b[c]]"])
    func invalidKeyNames(key: String) throws {
        let error = try #require(parseError("[g]\n\(key)=1\n"))
        #expect(error == KeyFileError(file: "test.conf", line: 2, group: "g", key: key, problem: .invalidKeyName))
        #expect(error.description.hasPrefix("test.conf:2: key '\(key)' in [g]: "))
    }

    @Test func hugeValueIsReadAndErrorsStayShort() throws {
        let huge = String(repeating: "x", count: 1 << 20)
        let keyFile = try parse("[g]\nbig=\(huge)\nafter=1\n")
        #expect(keyFile.entry("big", in: "g")?.value.utf8.count == 1 << 20)
        #expect(try keyFile.string("big", in: "g") == huge)
        #expect(try keyFile.stringList("big", in: "g") == [huge])
        #expect(keyFile.entry("after", in: "g")?.line == 3)

        let error = try #require(
            try valueError("[g]\nbig=\(huge)\n") { file throws(KeyFileError) in try file.bool("big", in: "g") })
        #expect(error.line == 2)
        #expect(error.description.count < 300)
        #expect(error.description.hasPrefix("test.conf:2: key 'big' in [g]: 'xxx"))

        let malformed = try #require(parseError("[g]\n\(huge)\n"))
        #expect(malformed.line == 2)
        #expect(malformed.description.count < 300)
    }

    @Test func manyLinesAreNumberedCorrectly() throws {
        var text = "[g]\n"
        for index in 0..<50_000 { text += "k\(index)=\(index)\n" }
        let keyFile = try parse(text)
        #expect(keyFile.group("g")?.entries.count == 50_000)
        #expect(keyFile.entry("k49999", in: "g")?.line == 50_001)
        #expect(parseError(text + "bad line\n")?.line == 50_002)
    }
}

@Suite struct KeyFileValueTests {
    @Test func booleansFollowGLib() throws {
        let keyFile = try parse("[g]\na=true\nb=false\nc=1\nd=0\ne = true \n")
        #expect(try keyFile.bool("a", in: "g") == true)
        #expect(try keyFile.bool("b", in: "g") == false)
        #expect(try keyFile.bool("c", in: "g") == true)
        #expect(try keyFile.bool("d", in: "g") == false)
        #expect(try keyFile.bool("e", in: "g") == true)
        #expect(try keyFile.bool("missing", in: "g") == nil)
        #expect(try keyFile.bool("a", in: "no-such-group") == nil)
    }

    @Test(arguments: ["True", "FALSE", "yes", "on", "2", "", "true # comment", "truee"])
    func nonBooleansAreRefusedWithTheirValue(value: String) throws {
        let error = try #require(
            try valueError("[g]\n\nflag=\(value)\n") { file throws(KeyFileError) in try file.bool("flag", in: "g") })
        #expect(error.line == 3)
        #expect(error.group == "g")
        #expect(error.key == "flag")
        #expect(error.problem == .invalidValue(value: value, expected: "a boolean (true or false)"))
        #expect(error.description == "test.conf:3: key 'flag' in [g]: '\(value)' is not a boolean (true or false)")
    }

    @Test func stringsInterpretGLibEscapes() throws {
        let keyFile = try parse(#"[g]\#na=\sx\ty\nz\r\\\#nplain=C:\#n"#)
        #expect(try keyFile.string("a", in: "g") == " x\ty\nz\r\\")
        #expect(try keyFile.string("plain", in: "g") == "C:")
        #expect(try keyFile.string("missing", in: "g") == nil)
    }

    @Test(arguments: [(#"a\x"#, #"\x"#), (#"a\;b"#, #"\;"#), (#"trailing\"#, #"\"#)])
    func invalidEscapesAreRefused(value: String, sequence: String) throws {
        let error = try #require(
            try valueError("[g]\ns=\(value)\n") { file throws(KeyFileError) in try file.string("s", in: "g") })
        #expect(
            error == KeyFileError(file: "test.conf", line: 2, group: "g", key: "s", problem: .invalidEscape(sequence)))
        #expect(error.description.hasPrefix("test.conf:2: key 's' in [g]: invalid escape sequence '\(sequence)'"))
    }

    @Test(arguments: [
        ("a;b;c", ["a", "b", "c"]),
        ("a;b;", ["a", "b"]),
        ("", []),
        (";", [""]),
        ("a;;b", ["a", "", "b"]),
        (" a ; b ;  ", ["a", "b"]),
        (#"a\;b;c"#, ["a;b", "c"]),
        (#"\sa;b\\"#, [" a", #"b\"#]),
        ("single", ["single"]),
    ])
    func listsSplitAtSemicolons(value: String, items: [String]) throws {
        #expect(try parse("[g]\nlist=\(value)\n").stringList("list", in: "g") == items)
    }

    @Test func listErrorsNameTheKey() throws {
        let error = try #require(
            try valueError("[g]\nlist=a;b\\q\n") { file throws(KeyFileError) in try file.stringList("list", in: "g") })
        #expect(error.problem == .invalidEscape(#"\q"#))
        #expect(error.line == 2)
        #expect(try parse("[g]\n").stringList("list", in: "g") == nil)
    }

    @Test func integersAreDecimalAndFitTheirType() throws {
        let keyFile = try parse("[g]\nport=2947\nplus=+7\nneg=-3\n")
        #expect(try keyFile.integer("port", in: "g", as: UInt16.self) == 2947)
        #expect(try keyFile.integer("plus", in: "g", as: Int.self) == 7)
        #expect(try keyFile.integer("neg", in: "g", as: Int32.self) == -3)
        #expect(try keyFile.integer("missing", in: "g", as: Int.self) == nil)
    }

    @Test(arguments: ["70000", "-1", "0x10", "12abc", "", "1.5", " "])
    func badIntegersAreRefused(value: String) throws {
        let error = try #require(
            try valueError("[g]\nport=\(value)\n") { file throws(KeyFileError) in
                try file.integer("port", in: "g", as: UInt16.self)
            })
        #expect(error.key == "port")
        #expect(error.line == 2)
        #expect(error.description.contains("is not an integer in 0...65535"))
    }

    @Test func integerLists() throws {
        let keyFile = try parse("[g]\nusers=1000;1001;\nnone=\nspaced= 0 ; 42 \n")
        #expect(try keyFile.integerList("users", in: "g", as: UInt32.self) == [1000, 1001])
        #expect(try keyFile.integerList("none", in: "g", as: UInt32.self) == [])
        #expect(try keyFile.integerList("spaced", in: "g", as: UInt32.self) == [0, 42])
        #expect(try keyFile.integerList("missing", in: "g", as: UInt32.self) == nil)

        let error = try #require(
            try valueError("[g]\n\nusers=1000;bob\n") { file throws(KeyFileError) in
                try file.integerList("users", in: "g", as: UInt32.self)
            })
        #expect(error.line == 3)
        #expect(error.key == "users")
        #expect(error.description.hasPrefix("test.conf:3: key 'users' in [g]: 'bob' is not"))
    }

    @Test func doubles() throws {
        let keyFile = try parse("[g]\nspeed=2.5\nexp=1e3\nneg=-0.25\nnan=nan\n")
        #expect(try keyFile.double("speed", in: "g") == 2.5)
        #expect(try keyFile.double("exp", in: "g") == 1000)
        #expect(try keyFile.double("neg", in: "g") == -0.25)
        #expect(try keyFile.double("nan", in: "g")?.isNaN == true)
        #expect(try keyFile.double("missing", in: "g") == nil)

        let error = try #require(
            try valueError("[g]\nspeed=fast\n") { file throws(KeyFileError) in try file.double("speed", in: "g") })
        #expect(error.description == "test.conf:2: key 'speed' in [g]: 'fast' is not a number")
    }
}
