import Testing
import WhereaboutsCore

/// The error that parsing `text` as a configuration throws, or nil when it parses.
private func configurationError(_ text: String, file: String = "geoclue.conf") -> ConfigurationError? {
    do {
        _ = try Configuration.parse(text, file: file)
        return nil
    } catch {
        return error
    }
}

/// A configuration in the shape of the one GeoClue 2.7 ships, comments and all.
private let geoclueShippedConfiguration = """
    # Configuration file for Geoclue
    #
    # Keys left out take the built-in defaults.

    # Agent configuration options
    [agent]

    # Desktop IDs (without .desktop) of the agents we accept, separated by ';'
    whitelist=geoclue-demo-agent;gnome-shell;io.elementary.desktop.agent-geoclue2;sm.puri.Phosh;lipstick

    # Network NMEA source configuration options
    [network-nmea]

    # Fetch location from NMEA sources on the local network?
    enable=true

    # Read NMEA from a Unix socket instead
    #nmea-socket=/var/run/gps-share.sock

    # 3G source configuration options
    [3g]
    enable=true

    # CDMA source configuration options
    [cdma]
    enable=true

    # Modem GPS source configuration options
    [modem-gps]
    enable=true

    # WiFi source configuration options
    [wifi]
    enable=true

    # Ichnaea-compatible geolocate URL
    url=https://api.beacondb.net/v1/geolocate
    #url=https://www.googleapis.com/geolocation/v1/geolocate?key=YOUR_KEY

    # Submit data when there is a GPS fix?
    submit-data=false
    submission-url=https://api.beacondb.net/v2/geosubmit
    submission-nick=geoclue

    # Compass configuration options
    [compass]
    enable=true

    # Static source configuration options
    [static-source]
    enable=false

    # Application configuration options
    #
    # [random-app]
    # allowed=true|false
    # system=true|false
    # users=

    [gnome-datetime-panel]
    allowed=true
    system=true
    users=

    [gnome-color-panel]
    allowed=true
    system=true
    users=

    [org.gnome.Shell]
    allowed=true
    system=true
    users=

    [io.elementary.desktop.agent-geoclue2]
    allowed=true
    system=true
    users=

    [sm.puri.Phosh]
    allowed=true
    system=true
    users=

    [lipstick]
    allowed=true
    system=true
    users=

    [epiphany]
    allowed=true
    system=false
    users=

    [firefox]
    allowed=true
    system=false
    users=
    """

@Suite struct ConfigurationParsingTests {
    @Test func defaults() {
        let configuration = Configuration.default
        #expect(
            configuration.agentWhitelist == [
                "geoclue-demo-agent", "gnome-shell", "io.elementary.desktop.agent-geoclue2", "sm.puri.Phosh",
                "lipstick",
            ])
        #expect(configuration.apps.isEmpty)
        #expect(configuration.staticSource == StaticSourceConfig(enabled: false, path: "/etc/geolocation"))
        #expect(configuration.replay == ReplayConfig(enabled: false, path: nil, speed: 1.0))
        #expect(configuration.gpsd == GPSDConfig(enabled: false, host: "localhost", port: 2947))
        #expect(configuration.networkNMEA == NMEASocketConfig(enabled: false, socketPath: nil))
    }

    @Test func emptyFileGivesTheDefaults() throws {
        #expect(try Configuration.parse("", file: "empty.conf") == .default)
        #expect(try Configuration.parse("# nothing here\n\n", file: "empty.conf") == .default)
    }

    @Test func geoclueShippedConfigurationCarriesOver() throws {
        let configuration = try Configuration.parse(geoclueShippedConfiguration, file: "/etc/geoclue/geoclue.conf")
        #expect(configuration.agentWhitelist == Configuration.defaultAgentWhitelist)
        #expect(configuration.networkNMEA == NMEASocketConfig(enabled: true, socketPath: nil))
        #expect(configuration.staticSource.enabled == false)
        #expect(configuration.compass == CompassConfig(enabled: true))
        #expect(configuration.modem == ModemConfig(gnssEnabled: true, cellEnabled: true, cdmaEnabled: true))
        #expect(
            configuration.network.wifi
                == WiFiPositioningConfig(
                    enabled: true, url: "https://api.beacondb.net/v1/geolocate", submitData: false,
                    submissionURL: "https://api.beacondb.net/v2/geosubmit", submissionNick: "geoclue"))
        #expect(configuration.network.wifiEnabled && !configuration.network.ipEnabled)
        #expect(configuration.apps.count == 8)
        for system in [
            "gnome-datetime-panel", "gnome-color-panel", "org.gnome.Shell", "io.elementary.desktop.agent-geoclue2",
            "sm.puri.Phosh", "lipstick",
        ] {
            #expect(configuration.app(system) == AppEntry(allowed: true, system: true, users: []))
            #expect(configuration.isSystemApp(system))
        }
        #expect(configuration.app("firefox") == AppEntry(allowed: true, system: false, users: []))
        #expect(configuration.app("epiphany") == AppEntry(allowed: true, system: false, users: []))
        #expect(!configuration.isSystemApp("firefox"))
        #expect(configuration.replay == .init())
        #expect(configuration.gpsd == .init())
    }

    @Test func everyWhereaboutsSetting() throws {
        let configuration = try Configuration.parse(
            """
            [agent]
            whitelist=gnome-shell;my-agent;

            [static-source]
            enable=true
            path=/var/lib/whereabouts/geolocation

            [replay]
            enable=true
            path=/srv/tracks/commute.gpx
            speed=2.5

            [gpsd]
            enable=1
            host=gps.local
            port=12947

            [network-nmea]
            enable=true
            nmea-socket=/run/gps-share.sock

            [ip]
            enable=true
            method=ichnaea
            accuracy=20000

            [redshift]
            allowed=false
            system=false
            users=1000;1001
            """, file: "whereabouts.conf")
        #expect(configuration.agentWhitelist == ["gnome-shell", "my-agent"])
        #expect(
            configuration.staticSource == StaticSourceConfig(enabled: true, path: "/var/lib/whereabouts/geolocation"))
        #expect(configuration.replay == ReplayConfig(enabled: true, path: "/srv/tracks/commute.gpx", speed: 2.5))
        #expect(configuration.gpsd == GPSDConfig(enabled: true, host: "gps.local", port: 12947))
        #expect(configuration.networkNMEA == NMEASocketConfig(enabled: true, socketPath: "/run/gps-share.sock"))
        #expect(configuration.network.ip == IPPositioningConfig(enabled: true, method: .ichnaea, accuracy: 20000))
        #expect(configuration.network.ipLocateURL == NetworkPositioningConfig.defaultLocateURL)
        #expect(configuration.apps == ["redshift": AppEntry(allowed: false, system: false, users: [1000, 1001])])
    }

    @Test func leftOutKeysKeepTheirDefaults() throws {
        let configuration = try Configuration.parse(
            "[agent]\n[gpsd]\nenable=true\n[replay]\nspeed=4\n[static-source]\npath=/etc/other\n", file: "c.conf")
        #expect(configuration.agentWhitelist == Configuration.defaultAgentWhitelist)
        #expect(configuration.gpsd == GPSDConfig(enabled: true, host: "localhost", port: 2947))
        #expect(configuration.replay == ReplayConfig(enabled: false, path: nil, speed: 4))
        #expect(configuration.staticSource == StaticSourceConfig(enabled: false, path: "/etc/other"))
    }

    @Test func emptyWhitelistMeansNoAgent() throws {
        let configuration = try Configuration.parse("[agent]\nwhitelist=\n", file: "c.conf")
        #expect(configuration.agentWhitelist.isEmpty)
        #expect(!configuration.isAgentAllowed("gnome-shell"))
    }

    @Test func whitespaceCommentsAndCRLF() throws {
        let text =
            "# comment\r\n  [gpsd]  \r\n\t enable = true \r\n  # indented comment\r\n port =  3000\r\n"
            + "[firefox]\r\nallowed = true\r\nsystem = false\r\nusers = 1000 ; 1001 ;\r\n"
        let configuration = try Configuration.parse(text, file: "crlf.conf")
        #expect(configuration.gpsd == GPSDConfig(enabled: true, host: "localhost", port: 3000))
        #expect(configuration.app("firefox") == AppEntry(allowed: true, system: false, users: [1000, 1001]))
    }

    @Test func duplicatesFollowGLibLastWins() throws {
        let configuration = try Configuration.parse(
            """
            [gpsd]
            port=1000
            port=2000
            [firefox]
            allowed=false
            system=false
            [gpsd]
            enable=true
            [firefox]
            users=
            allowed=true
            """, file: "dup.conf")
        #expect(configuration.gpsd == GPSDConfig(enabled: true, host: "localhost", port: 2000))
        #expect(configuration.app("firefox") == AppEntry(allowed: true, system: false, users: []))
    }

    @Test func compassSettings() throws {
        #expect(
            Configuration.default.compass
                == CompassConfig(enabled: false, magneticModelPath: nil))
        let configuration = try Configuration.parse(
            "[compass]\nenable=true\nmagnetic-model=/opt/wmm/WMM.COF\n", file: "c.conf")
        #expect(configuration.compass == CompassConfig(enabled: true, magneticModelPath: "/opt/wmm/WMM.COF"))
        #expect(throws: ConfigurationError.self) {
            try Configuration.parse("[compass]\nenable=banana\n", file: "c.conf")
        }
        #expect(throws: ConfigurationError.self) {
            try Configuration.parse("[compass]\nmagnetic-model=WMM.COF\n", file: "c.conf")
        }
        #expect(throws: ConfigurationError.self) {
            try Configuration.parse("[compass]\nheading=north\n", file: "c.conf")
        }
    }

    @Test func modemSourcesAreOffUnlessEnabled() throws {
        #expect(Configuration.default.modem == ModemConfig())
        let configuration = try Configuration.parse("[modem-gps]\nenable=true\n[3g]\nenable=false\n", file: "c.conf")
        #expect(configuration.modem == ModemConfig(gnssEnabled: true))
        #expect(throws: ConfigurationError.self) {
            try Configuration.parse("[3g]\nurl=https://example.org\n", file: "c.conf")
        }
        #expect(throws: ConfigurationError.self) { try Configuration.parse("[cdma]\nenable=maybe\n", file: "c.conf") }
    }

    @Test func networkPositioningSettings() throws {
        let configuration = try Configuration.parse(
            """
            [network]
            enable=false
            ca-file=/etc/ssl/private-ca.pem

            [wifi]
            enable=true
            url=http://127.0.0.1:8080/v1/geolocate?key=abc
            submit-data=true
            submission-url=https://example.org/v2/geosubmit
            submission-nick=

            [ip]
            enable=true
            """, file: "n.conf")
        #expect(configuration.network.caFile == "/etc/ssl/private-ca.pem")
        #expect(configuration.network.wifi.url == "http://127.0.0.1:8080/v1/geolocate?key=abc")
        #expect(configuration.network.wifi.submissionNick == "")
        #expect(
            try Configuration.parse("[wifi]\nsubmission-nick=Jane Doe\n", file: "n.conf").network.wifi.submissionNick
                == "Jane Doe")
        #expect(loggableURL("https://example.org/v1/geolocate?key=secret") == "https://example.org/v1/geolocate?…")
        #expect(loggableURL("https://api.beacondb.net/v1/geolocate") == "https://api.beacondb.net/v1/geolocate")
        #expect(configuration.network.ipLocateURL == "http://127.0.0.1:8080/v1/geolocate?key=abc")
        // [network] enable=false turns everything off, whatever [wifi] and [ip] say.
        #expect(!configuration.network.wifiEnabled && !configuration.network.ipEnabled)
        #expect(!configuration.network.submitsData)
        #expect(configuration.network.wifi.selection.movingNetworks == MovingNetworks())
        let moving = try Configuration.parse("[wifi]\nmoving-networks=Ferry Wi-Fi;Tram 5\n", file: "m.conf")
        #expect(moving.network.wifi.selection.movingNetworks == MovingNetworks(configured: ["Ferry Wi-Fi", "Tram 5"]))
        let keeping = try Configuration.parse("[wifi]\nignore-moving-networks=false\n", file: "m.conf")
        #expect(keeping.network.wifi.selection.movingNetworks == nil)
        let unsupported = try Configuration.parse("[ip]\nenable=true\nmethod=gmaps\n", file: "g.conf")
        #expect(unsupported.network.ip.method == .unsupported("gmaps"))
        #expect(!unsupported.network.ipEnabled)
    }

    @Test func badNetworkPositioningValuesAreRefused() throws {
        for (text, key) in [
            ("[wifi]\nurl=ftp://example.org/\n", "url"), ("[wifi]\nurl=https:///v1\n", "url"),
            ("[wifi]\nurl=https://exa mple.org/\n", "url"), ("[wifi]\nsubmission-nick=x\n", "submission-nick"),
            ("[wifi]\nsubmission-nick=a\\tb\n", "submission-nick"),
            ("[wifi]\nenabled=true\n", "enabled"), ("[ip]\nmethod=guess\n", "method"),
            ("[ip]\naccuracy=-1\n", "accuracy"), ("[network]\nca-file=relative.pem\n", "ca-file"),
            ("[wifi]\nignore-moving-networks=yes\n", "ignore-moving-networks"),
            ("[wifi]\nmoving-networks=Ferry;;Tram\n", "moving-networks"),
            ("[wifi]\nmoving-networks=\(String(repeating: "x", count: 33))\n", "moving-networks"),
            ("[wifi]\nmoving-networks=\((0...64).map { "n\($0)" }.joined(separator: ";"))\n", "moving-networks"),
        ] {
            let error = try #require(configurationError(text, file: "bad.conf"), "accepted \(text)")
            #expect(error.key == key, "\(error)")
        }
    }

    @Test func hugeValuesAreHandled() throws {
        let huge = String(repeating: "a", count: 1 << 20)
        let configuration = try Configuration.parse("[agent]\nwhitelist=\(huge);gnome-shell\n", file: "big.conf")
        #expect(configuration.agentWhitelist.count == 2)
        #expect(configuration.agentWhitelist[0].utf8.count == 1 << 20)

        let error = try #require(configurationError("[gpsd]\nhost=\(huge)\nport=\(huge)\n", file: "big.conf"))
        #expect(error.line == 3)
        #expect(error.key == "port")
        #expect(error.description.hasPrefix("big.conf:3: key 'port' in [gpsd]: 'aaa"))
        #expect(error.description.count < 300)
    }
}

@Suite struct ConfigurationLookupTests {
    let configuration = Configuration(apps: [
        "gnome-datetime-panel": AppEntry(allowed: true, system: true),
        "firefox": AppEntry(allowed: true, system: false, users: [1000, 1001]),
        "tracker": AppEntry(allowed: false, system: false),
    ])

    @Test func appLookup() {
        #expect(configuration.app("firefox")?.users == [1000, 1001])
        #expect(configuration.app("unknown") == nil)
    }

    @Test func systemApps() {
        #expect(configuration.isSystemApp("gnome-datetime-panel"))
        #expect(!configuration.isSystemApp("firefox"))
        #expect(!configuration.isSystemApp("unknown"))
    }

    @Test func permissionsFollowGeoClue() {
        #expect(configuration.permission(for: "gnome-datetime-panel", uid: 4242) == .allowed)
        #expect(configuration.permission(for: "firefox", uid: 1001) == .allowed)
        #expect(configuration.permission(for: "firefox", uid: 1002) == .disallowed)
        #expect(configuration.permission(for: "tracker", uid: 1000) == .disallowed)
        #expect(configuration.permission(for: "unknown", uid: 1000) == .askAgent)
    }

    @Test func appEntryAllows() {
        #expect(AppEntry(allowed: true, system: false).allows(uid: 0))
        #expect(!AppEntry(allowed: false, system: false).allows(uid: 0))
        #expect(AppEntry(allowed: true, system: false, users: [5]).allows(uid: 5))
        #expect(!AppEntry(allowed: true, system: false, users: [5]).allows(uid: 6))
        #expect(!AppEntry(allowed: false, system: false, users: [5]).allows(uid: 5))
    }

    @Test func agentWhitelist() {
        #expect(Configuration.default.isAgentAllowed("gnome-shell"))
        #expect(Configuration.default.isAgentAllowed("sm.puri.Phosh"))
        #expect(!Configuration.default.isAgentAllowed("evil-agent"))
    }
}

@Suite struct ConfigurationErrorTests {
    @Test func unknownKeyInAKnownSection() throws {
        let error = try #require(configurationError("# gpsd\n[gpsd]\nenable=true\nhots=localhost\n"))
        #expect(
            error
                == ConfigurationError(
                    file: "geoclue.conf", line: 4, group: "gpsd", key: "hots",
                    problem: .unknownKey(known: ["enable", "host", "port"])))
        #expect(
            error.description
                == "geoclue.conf:4: key 'hots' in [gpsd]: unknown key; this group takes enable, host, port")
    }

    @Test(arguments: [
        ("agent", "whitelist[de]"), ("static-source", "url"), ("replay", "loop"), ("network-nmea", "avahi"),
        ("agent", "enable"),
    ])
    func unknownKeysInEachKnownSection(group: String, key: String) throws {
        let error = try #require(configurationError("[\(group)]\n\(key)=1\n"))
        #expect(error.line == 2)
        #expect(error.group == group)
        #expect(error.key == key)
        #expect(error.description.hasPrefix("geoclue.conf:2: key '\(key)' in [\(group)]: unknown key"))
    }

    @Test(arguments: [
        ("static-source", "enable"), ("replay", "enable"), ("gpsd", "enable"), ("network-nmea", "enable"),
    ])
    func nonBooleanEnable(group: String, key: String) throws {
        let error = try #require(configurationError("[\(group)]\n\n\(key)=yes\n"))
        #expect(
            error
                == ConfigurationError(
                    file: "geoclue.conf", line: 3, group: group, key: key,
                    problem: .invalidValue(value: "yes", expected: "a boolean (true or false)")))
        #expect(
            error.description == "geoclue.conf:3: key '\(key)' in [\(group)]: 'yes' is not a boolean (true or false)")
    }

    @Test(arguments: ["http", "-1", "70000", "29 47", "2947.0", ""])
    func portThatIsNotANumber(value: String) throws {
        let error = try #require(configurationError("[gpsd]\nport=\(value)\n"))
        #expect(error.line == 2)
        #expect(error.key == "port")
        #expect(error.problem == .invalidValue(value: value, expected: "an integer in 0...65535"))
        #expect(error.description.contains("'\(value)'"))
    }

    @Test func portZeroIsRefused() throws {
        let error = try #require(configurationError("[gpsd]\nport=0\n"))
        #expect(error.description == "geoclue.conf:2: key 'port' in [gpsd]: '0' is not a port number in 1...65535")
    }

    @Test func emptyHostIsRefused() throws {
        let error = try #require(configurationError("[gpsd]\nhost=\n"))
        #expect(error.description == "geoclue.conf:2: key 'host' in [gpsd]: '' is not a host name or address")
    }

    @Test(arguments: ["0", "-1", "nan", "inf", "-inf", "1e999", "fast", ""])
    func badSpeeds(value: String) throws {
        let error = try #require(configurationError("[replay]\npath=/t.gpx\nspeed=\(value)\n"))
        #expect(error.line == 3)
        #expect(error.key == "speed")
        #expect(error.description.hasPrefix("geoclue.conf:3: key 'speed' in [replay]: '\(value)' is not a"))
    }

    @Test func replayEnabledWithoutPath() throws {
        let error = try #require(configurationError("[replay]\nspeed=2\nenable=true\n"))
        #expect(
            error
                == ConfigurationError(
                    file: "geoclue.conf", line: 3, group: "replay", key: "enable", problem: .replayWithoutPath))
        #expect(
            error.description
                == "geoclue.conf:3: key 'enable' in [replay]: replay is enabled but the group has no path=")
        // Disabled without a path is fine.
        #expect(configurationError("[replay]\nenable=false\n") == nil)
    }

    @Test(arguments: [
        ("static-source", "path"), ("replay", "path"), ("network-nmea", "nmea-socket"),
    ])
    func pathsMustBeAbsolute(group: String, key: String) throws {
        for value in ["relative/file", "", "~/geolocation"] {
            let error = try #require(configurationError("[\(group)]\n\(key)=\(value)\n"))
            #expect(
                error.description == "geoclue.conf:2: key '\(key)' in [\(group)]: '\(value)' is not an absolute path")
        }
    }

    @Test func pathsTakeGLibEscapes() throws {
        let configuration = try Configuration.parse(#"[static-source]\#npath=/srv/my\sfile\#n"#, file: "c.conf")
        #expect(configuration.staticSource.path == "/srv/my file")
        let error = try #require(configurationError(#"[static-source]\#npath=/srv/\q\#n"#))
        #expect(error.problem == .syntax(.invalidEscape(#"\q"#)))
        #expect(error.description.hasPrefix("geoclue.conf:2: key 'path' in [static-source]: invalid escape"))
    }

    @Test(arguments: ["allowed", "system", "users"])
    func appEntryMissingAKey(missing: String) throws {
        let lines = ["allowed=true", "system=false", "users="].filter { !$0.hasPrefix(missing) }
        let text = "[agent]\n\n[firefox]\n" + lines.joined(separator: "\n") + "\n"
        let error = try #require(configurationError(text))
        #expect(
            error
                == ConfigurationError(
                    file: "geoclue.conf", line: 3, group: "firefox", key: missing, problem: .missingKey))
        #expect(error.description.hasPrefix("geoclue.conf:3: key '\(missing)' in [firefox]: missing; "))
    }

    @Test func misspelledSectionIsReportedAsAnAppEntry() throws {
        let error = try #require(configurationError("[gspd]\nenable=true\n"))
        #expect(error.key == "allowed")
        #expect(error.description.contains("every group that is not a known section is an app entry"))
    }

    @Test func appEntryWithAnUnknownKey() throws {
        let error = try #require(configurationError("[firefox]\nallowed=true\nsystem=false\nusers=\nreason=web\n"))
        #expect(
            error
                == ConfigurationError(
                    file: "geoclue.conf", line: 5, group: "firefox", key: "reason",
                    problem: .unknownKey(known: ["allowed", "system", "users"])))
    }

    @Test(arguments: ["bob", "-1", "4294967296", "1000;x", "1000;;1001", "1.5"])
    func badUIDs(users: String) throws {
        let error = try #require(configurationError("[firefox]\nallowed=true\nsystem=false\nusers=\(users)\n"))
        #expect(error.line == 4)
        #expect(error.key == "users")
        #expect(error.description.hasPrefix("geoclue.conf:4: key 'users' in [firefox]: '"))
        #expect(error.description.contains("is not an integer in 0...4294967295"))
    }

    @Test(arguments: ["allowed", "system"])
    func appEntryNonBoolean(key: String) throws {
        let text = "[firefox]\nallowed=true\nsystem=false\nusers=\n\(key)=sometimes\n"
        let error = try #require(configurationError(text))
        #expect(error.line == 5)
        #expect(
            error.description
                == "geoclue.conf:5: key '\(key)' in [firefox]: 'sometimes' is not a boolean (true or false)")
    }

    @Test func syntaxErrorsNameTheLine() throws {
        let malformed = try #require(
            configurationError("[agent]\nwhitelist=a\nnonsense\n", file: "/etc/geoclue/geoclue.conf"))
        #expect(malformed.problem == .syntax(.malformedLine("nonsense")))
        #expect(malformed.description.hasPrefix("/etc/geoclue/geoclue.conf:3: 'nonsense' is not"))

        let outside = try #require(configurationError("enable=true\n[gpsd]\n"))
        #expect(outside.description == "geoclue.conf:1: key 'enable': key-value pair before the first [group] header")

        let badGroup = try #require(configurationError("[gpsd\n"))
        #expect(badGroup.problem == .syntax(.malformedGroupHeader("[gpsd")))
        #expect(badGroup.line == 1)

        let emptyGroup = try #require(configurationError("[]\n"))
        #expect(emptyGroup.description.hasPrefix("geoclue.conf:1: []: group name must not be empty"))
    }

    @Test func trailingCommentIsPartOfTheValueAndRefused() throws {
        let error = try #require(configurationError("[gpsd]\nenable=true # on\n"))
        #expect(error.problem == .invalidValue(value: "true # on", expected: "a boolean (true or false)"))
    }
}
