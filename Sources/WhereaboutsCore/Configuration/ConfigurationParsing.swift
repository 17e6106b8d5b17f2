extension Configuration {
    /// Parses and validates the text of a `geoclue.conf`; `file` names it in errors.
    ///
    /// Settings the text leaves out keep their ``default`` values. The first problem found refuses the whole file:
    /// a syntax error, an unknown key in a known section, a value of the wrong type or out of range, an app entry
    /// without `allowed=`, `system=` or `users=`, or `[replay]` enabled without a path.
    ///
    /// A NUL character refuses the file at its line. A key given twice in a group keeps its last value, as GLib
    /// does, and is listed in ``Configuration/duplicateKeys`` for the daemon to warn about.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> Configuration {
        let keyFile: KeyFile
        do {
            keyFile = try KeyFile(parsing: text, file: file)
        } catch {
            throw ConfigurationError(error)
        }
        return try validate(keyFile)
    }

    /// Parses and validates a `geoclue.conf` read as bytes, as the text is; bytes that are not UTF-8 are refused at
    /// the first line they spoil.
    public static func parse(_ bytes: [UInt8], file: String) throws(ConfigurationError) -> Configuration {
        let keyFile: KeyFile
        do {
            keyFile = try KeyFile(parsing: bytes, file: file)
        } catch {
            throw ConfigurationError(error)
        }
        return try validate(keyFile)
    }

    /// Validates a parsed key file.
    private static func validate(_ keyFile: KeyFile) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration.default
        configuration.duplicateKeys = keyFile.duplicateKeys
        for group in keyFile.groups {
            let section = Section(keyFile: keyFile, group: group)
            switch group.name {
            case "authorisation":
                try section.checkKeys(["polkit", "grants"])
                try section.load("polkit", into: &configuration.authorisation.usesPolkit, section.bool)
                try section.load("grants", into: &configuration.authorisation.grantsPath, section.absolutePath)
            case "agent":
                try section.checkKeys(["whitelist"])
                try section.load("whitelist", into: &configuration.agentWhitelist, section.stringList)
            case "static-source":
                try section.checkKeys(["enable", "path"])
                try section.load("enable", into: &configuration.staticSource.enabled, section.bool)
                try section.load("path", into: &configuration.staticSource.path, section.absolutePath)
            case "replay":
                try section.checkKeys(["enable", "path", "speed"])
                try section.load("enable", into: &configuration.replay.enabled, section.bool)
                configuration.replay.path = try section.absolutePath("path")
                try section.load("speed", into: &configuration.replay.speed, section.speed)
                if configuration.replay.enabled, configuration.replay.path == nil, let enable = group.entry("enable") {
                    throw section.error(enable, .replayWithoutPath)
                }
            case "gpsd":
                try section.checkKeys(["enable", "host", "port"])
                try section.load("enable", into: &configuration.gpsd.enabled, section.bool)
                try section.load("host", into: &configuration.gpsd.host, section.host)
                try section.load("port", into: &configuration.gpsd.port, section.port)
            case "network-nmea":
                try section.checkKeys(["enable", "nmea-socket", "device", "baud", "tcp-host", "tcp-port"])
                try section.load("enable", into: &configuration.networkNMEA.enabled, section.bool)
                configuration.networkNMEA.socketPath = try section.absolutePath("nmea-socket")
                configuration.networkNMEA.devicePath = try section.absolutePath("device")
                configuration.networkNMEA.baudRate = try section.baudRate("baud")
                configuration.networkNMEA.tcpHost = try section.host("tcp-host")
                configuration.networkNMEA.tcpPort = try section.port("tcp-port")
                if (configuration.networkNMEA.tcpHost == nil) != (configuration.networkNMEA.tcpPort == nil) {
                    let entry = group.entry("tcp-host") ?? group.entry("tcp-port")!
                    throw section.invalid(entry, expected: "both tcp-host= and tcp-port=")
                }
            case "network":
                try section.checkKeys(["enable", "ca-file"])
                try section.load("enable", into: &configuration.network.enabled, section.bool)
                configuration.network.caFile = try section.absolutePath("ca-file")
            case "wifi":
                try section.checkKeys([
                    "enable", "url", "submit-data", "submission-url", "submission-nick", "ignore-moving-networks",
                    "moving-networks",
                ])
                try section.load("enable", into: &configuration.network.wifi.enabled, section.bool)
                try section.load("url", into: &configuration.network.wifi.url, section.webURL)
                try section.load("submit-data", into: &configuration.network.wifi.submitData, section.bool)
                try section.load("submission-url", into: &configuration.network.wifi.submissionURL, section.webURL)
                try section.load("submission-nick", into: &configuration.network.wifi.submissionNick, section.nickname)
                try section.load(
                    "ignore-moving-networks", into: &configuration.network.wifi.ignoresMovingNetworks, section.bool)
                try section.load("moving-networks", into: &configuration.network.wifi.movingNetworks, section.ssidList)
            case "ip":
                try section.checkKeys(["enable", "method", "url", "accuracy", "through-vpn"])
                try section.load("enable", into: &configuration.network.ip.enabled, section.bool)
                try section.load("method", into: &configuration.network.ip.method, section.ipMethod)
                configuration.network.ip.url = try section.webURL("url")
                configuration.network.ip.accuracy = try section.radius("accuracy")
                try section.load("through-vpn", into: &configuration.network.ip.asksThroughTunnels, section.bool)
            case "modem-gps":
                try section.checkKeys([
                    "enable", "assistance", "assistance-servers", "assistance-metered", "supl-server",
                ])
                try section.load("enable", into: &configuration.modem.gnssEnabled, section.bool)
                try section.load("assistance", into: &configuration.modem.assistance.enabled, section.bool)
                configuration.modem.assistance.servers = try section.httpsURLList("assistance-servers")
                try section.load(
                    "assistance-metered", into: &configuration.modem.assistance.overMeteredConnection, section.bool)
                configuration.modem.assistance.suplServer = try section.hostAndPort("supl-server")
            case "3g":
                try section.checkKeys(["enable"])
                try section.load("enable", into: &configuration.modem.cellEnabled, section.bool)
            case "cdma":
                try section.checkKeys(["enable"])
                try section.load("enable", into: &configuration.modem.cdmaEnabled, section.bool)
            case "compass":
                try section.checkKeys(["enable", "magnetic-model"])
                try section.load("enable", into: &configuration.compass.enabled, section.bool)
                if let path = try section.absolutePath("magnetic-model") {
                    configuration.compass.magneticModelPath = path
                }
            default:
                configuration.apps[group.name] = try section.appEntry()
            }
        }
        return configuration
    }
}

/// One group of a configuration file being validated; turns key-file errors into configuration errors.
private struct Section {
    let keyFile: KeyFile
    let group: KeyFile.Group

    /// Overwrites `setting` with the value of `key` when the group has that key.
    func load<T>(_ key: String, into setting: inout T, _ value: (String) throws(ConfigurationError) -> T?)
        throws(ConfigurationError)
    {
        if let value = try value(key) { setting = value }
    }

    func error(_ entry: KeyFile.Entry, _ problem: ConfigurationProblem) -> ConfigurationError {
        ConfigurationError(file: keyFile.file, line: entry.line, group: group.name, key: entry.key, problem: problem)
    }

    func invalid(_ entry: KeyFile.Entry, expected: String) -> ConfigurationError {
        error(entry, .invalidValue(value: entry.value, expected: expected))
    }

    /// Refuses the first key that is not in `known`.
    func checkKeys(_ known: [String]) throws(ConfigurationError) {
        if let unknown = group.entries.first(where: { !known.contains($0.key) }) {
            throw error(unknown, .unknownKey(known: known))
        }
    }

    // The typed values, with key-file errors reported as configuration errors.

    func bool(_ key: String) throws(ConfigurationError) -> Bool? {
        do { return try keyFile.bool(key, in: group.name) } catch { throw ConfigurationError(error) }
    }

    func string(_ key: String) throws(ConfigurationError) -> String? {
        do { return try keyFile.string(key, in: group.name) } catch { throw ConfigurationError(error) }
    }

    func stringList(_ key: String) throws(ConfigurationError) -> [String]? {
        do { return try keyFile.stringList(key, in: group.name) } catch { throw ConfigurationError(error) }
    }

    func uids(_ key: String) throws(ConfigurationError) -> [UInt32]? {
        do { return try keyFile.integerList(key, in: group.name, as: UInt32.self) } catch {
            throw ConfigurationError(error)
        }
    }

    /// A string value that must be an absolute path.
    func absolutePath(_ key: String) throws(ConfigurationError) -> String? {
        guard let entry = group.entry(key), let path = try string(key) else { return nil }
        guard path.hasPrefix("/") else { throw invalid(entry, expected: "an absolute path") }
        return path
    }

    /// A string value that must not be empty.
    func host(_ key: String) throws(ConfigurationError) -> String? {
        guard let entry = group.entry(key), let host = try string(key) else { return nil }
        guard !host.isEmpty else { throw invalid(entry, expected: "a host name or address") }
        return host
    }

    /// A TCP port, 1...65535.
    func port(_ key: String) throws(ConfigurationError) -> UInt16? {
        let port: UInt16?
        do { port = try keyFile.integer(key, in: group.name, as: UInt16.self) } catch {
            throw ConfigurationError(error)
        }
        guard let entry = group.entry(key), let port else { return nil }
        guard port != 0 else { throw invalid(entry, expected: "a port number in 1...65535") }
        return port
    }

    /// A serial line speed that termios supports.
    func baudRate(_ key: String) throws(ConfigurationError) -> UInt32? {
        let rate: UInt32?
        do { rate = try keyFile.integer(key, in: group.name, as: UInt32.self) } catch {
            throw ConfigurationError(error)
        }
        guard let entry = group.entry(key), let rate else { return nil }
        guard NMEASocketConfig.baudRates.contains(rate) else {
            throw invalid(
                entry, expected: "one of \(NMEASocketConfig.baudRates.map(String.init).joined(separator: ", "))")
        }
        return rate
    }

    /// An `http://` or `https://` URL with a host.
    func webURL(_ key: String) throws(ConfigurationError) -> String? {
        guard let entry = group.entry(key), let url = try string(key) else { return nil }
        let rest = url.hasPrefix("https://") ? url.dropFirst(8) : url.hasPrefix("http://") ? url.dropFirst(7) : nil
        guard let rest, let host = rest.split(separator: "/", omittingEmptySubsequences: false).first, !host.isEmpty,
            url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else { throw invalid(entry, expected: "an http:// or https:// URL") }
        return url
    }

    /// What an `https://` URL list must be.
    static let httpsURLListExpected =
        "1 to \(PredictedOrbitCache.maximumServers) https:// URLs of at most \(PredictedOrbitCache.maximumURLLength) "
        + "bytes, separated by spaces or commas"

    /// One to ``PredictedOrbitCache/maximumServers`` `https://` URLs with a host, of at most
    /// ``PredictedOrbitCache/maximumURLLength`` bytes each, separated by spaces or commas.
    func httpsURLList(_ key: String) throws(ConfigurationError) -> [String]? {
        guard let entry = group.entry(key), let text = try string(key) else { return nil }
        let urls = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).map(String.init)
        let valid = urls.allSatisfy { url in
            guard url.hasPrefix("https://"), PredictedOrbitCache.isPlainURL(url) else { return false }
            return url.dropFirst(8).split(separator: "/", omittingEmptySubsequences: false).first?.isEmpty == false
        }
        guard !urls.isEmpty, urls.count <= PredictedOrbitCache.maximumServers, valid else {
            throw invalid(entry, expected: Self.httpsURLListExpected)
        }
        return urls
    }

    /// `HOST:PORT`: a host name or address (an IPv6 address in brackets) and a port in 1...65535.
    func hostAndPort(_ key: String) throws(ConfigurationError) -> String? {
        guard let entry = group.entry(key), let text = try string(key) else { return nil }
        let expected = "HOST:PORT, with a port in 1...65535"
        guard let colon = text.lastIndex(of: ":") else { throw invalid(entry, expected: expected) }
        let host = text[..<colon]
        let portText = text[text.index(after: colon)...]
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2
        let hostIsValid =
            !host.isEmpty && host.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") }
            && (bracketed || !host.contains { $0 == ":" || $0 == "[" || $0 == "]" })
        guard hostIsValid, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let port = UInt16(portText),
            port != 0
        else {
            throw invalid(entry, expected: expected)
        }
        return text
    }

    /// GeoClue's `submission-nick=`: empty (none is sent), or 2 to 32 characters, without control characters
    /// (it goes into an HTTP header).
    func nickname(_ key: String) throws(ConfigurationError) -> String? {
        guard let entry = group.entry(key), let nick = try string(key) else { return nil }
        let printable = nick.unicodeScalars.allSatisfy {
            $0.value >= 0x20 && $0.value != 0x7f && !(0x80..<0xa0).contains($0.value)
        }
        guard nick.isEmpty || ((2...32).contains(nick.count) && printable)
        else { throw invalid(entry, expected: "empty or 2 to 32 characters without control characters") }
        return nick
    }

    /// Network names (SSIDs) separated by `;`, each of 1 to ``MovingNetworks/maximumSSIDLength`` bytes without
    /// control characters, at most ``MovingNetworks/maximumConfigured`` of them.
    func ssidList(_ key: String) throws(ConfigurationError) -> [String]? {
        guard let entry = group.entry(key), let text = try string(key) else { return nil }
        let names = text.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        let valid = names.allSatisfy { name in
            (1...MovingNetworks.maximumSSIDLength).contains(name.utf8.count)
                && name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f }
        }
        guard valid, names.count <= MovingNetworks.maximumConfigured else {
            throw invalid(
                entry,
                expected: "up to \(MovingNetworks.maximumConfigured) network names of 1 to "
                    + "\(MovingNetworks.maximumSSIDLength) bytes, separated by ;")
        }
        return names
    }

    /// `[ip] method=`: `ichnaea`, or one of GeoClue's other methods, which are not supported.
    func ipMethod(_ key: String) throws(ConfigurationError) -> IPPositioningConfig.Method? {
        guard let entry = group.entry(key), let method = try string(key) else { return nil }
        switch method {
        case "ichnaea": return .ichnaea
        case "gmaps", "reallyfreegeoip": return .unsupported(method)
        default:
            throw invalid(entry, expected: "ichnaea (or GeoClue's gmaps or reallyfreegeoip, which are not supported)")
        }
    }

    /// A radius in metres: finite and greater than zero.
    func radius(_ key: String) throws(ConfigurationError) -> Double? {
        let radius: Double?
        do { radius = try keyFile.double(key, in: group.name) } catch { throw ConfigurationError(error) }
        guard let entry = group.entry(key), let radius else { return nil }
        guard radius.isFinite, radius > 0 else { throw invalid(entry, expected: "a radius in metres greater than 0") }
        return radius
    }

    /// A playback speed: finite and greater than zero.
    func speed(_ key: String) throws(ConfigurationError) -> Double? {
        let speed: Double?
        do { speed = try keyFile.double(key, in: group.name) } catch { throw ConfigurationError(error) }
        guard let entry = group.entry(key), let speed else { return nil }
        guard speed.isFinite, speed > 0 else { throw invalid(entry, expected: "a finite speed greater than 0") }
        return speed
    }

    /// An app entry: all of `allowed=`, `system=` and `users=`, and nothing else.
    func appEntry() throws(ConfigurationError) -> AppEntry {
        let entry = AppEntry(
            allowed: try required("allowed", bool),
            system: try required("system", bool),
            users: try required("users", uids))
        try checkKeys(["allowed", "system", "users"])
        return entry
    }

    /// The value of `key`, which an app entry must have.
    func required<T>(_ key: String, _ value: (String) throws(ConfigurationError) -> T?) throws(ConfigurationError)
        -> T
    {
        guard let value = try value(key) else {
            throw ConfigurationError(
                file: keyFile.file, line: group.line, group: group.name, key: key, problem: .missingKey)
        }
        return value
    }
}
