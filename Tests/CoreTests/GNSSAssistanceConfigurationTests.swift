import Testing
import WhereaboutsCore

/// `[modem-gps]`'s assisted GNSS keys: their defaults, their values, and bad values refused naming the line.
@Suite("[modem-gps] assistance keys")
struct GNSSAssistanceConfigurationTests {
    @Test func theDefaultsAssistFromTheModemsServersNeverMeteredAndSetNoSUPLServer() throws {
        let configuration = try Configuration.parse("[modem-gps]\nenable=true\n", file: "c.conf")
        #expect(configuration.modem.assistance == GNSSAssistanceConfig())
        #expect(configuration.modem.assistance.enabled)
        #expect(configuration.modem.assistance.servers == nil)
        #expect(!configuration.modem.assistance.overMeteredConnection)
        #expect(configuration.modem.assistance.suplServer == nil)
    }

    @Test func everyKeyIsRead() throws {
        let text = """
            [modem-gps]
            enable=true
            assistance=false
            assistance-servers=https://a.example/xtra3grc.bin, https://b.example:8443/x.bin,https://c.example/x
            assistance-metered=true
            supl-server=supl.example.net:7275

            """
        let assistance = try Configuration.parse(text, file: "c.conf").modem.assistance
        #expect(
            assistance
                == GNSSAssistanceConfig(
                    enabled: false,
                    servers: ["https://a.example/xtra3grc.bin", "https://b.example:8443/x.bin", "https://c.example/x"],
                    overMeteredConnection: true, suplServer: "supl.example.net:7275"))
    }

    @Test func anIPv6SUPLServerInBracketsIsTaken() throws {
        let configuration = try Configuration.parse("[modem-gps]\nsupl-server=[2001:db8::1]:7275\n", file: "c.conf")
        #expect(configuration.modem.assistance.suplServer == "[2001:db8::1]:7275")
    }

    @Test(arguments: [
        "http://a.example/xtra.bin", "https://", "ftp://a.example/x", "https://a.example/x http://b.example/y", "",
        ",", (0...8).map { "https://\($0).example/x" }.joined(separator: " "),
        "https://a.example/" + String(repeating: "x", count: 500),
    ])
    func assistanceServersThatAreNotHTTPSURLsAreRefusedAtTheirLine(value: String) throws {
        let error = try #require(Self.error("[modem-gps]\nenable=true\n\nassistance-servers=\(value)\n"))
        #expect(
            error
                == ConfigurationError(
                    file: "c.conf", line: 4, group: "modem-gps", key: "assistance-servers",
                    problem: .invalidValue(
                        value: value,
                        expected: "1 to 8 https:// URLs of at most 512 bytes, separated by spaces or commas")))
        #expect(error.description.hasPrefix("c.conf:4: key 'assistance-servers' in [modem-gps]: "))
    }

    @Test(arguments: [
        "supl.example.net", "supl.example.net:0", "supl.example.net:70000", ":7275", "host:port", "",
        "2001:db8::1:7275", "supl.example.net:+80", "[]:7275",
    ])
    func suplServersThatAreNotHostAndPortAreRefusedAtTheirLine(value: String) throws {
        let error = try #require(Self.error("[modem-gps]\nsupl-server=\(value)\n"))
        #expect(error.line == 2)
        #expect(error.key == "supl-server")
        #expect(error.problem == .invalidValue(value: value, expected: "HOST:PORT, with a port in 1...65535"))
    }

    @Test(arguments: ["assistance", "assistance-metered"])
    func nonBooleanSwitchesAreRefusedAtTheirLine(key: String) throws {
        let error = try #require(Self.error("[modem-gps]\n\(key)=yes\n"))
        #expect(error.line == 2)
        #expect(error.key == key)
        #expect(error.problem == .invalidValue(value: "yes", expected: "a boolean (true or false)"))
    }

    @Test func anUnknownKeyNamesTheKnownOnes() throws {
        let error = try #require(Self.error("[modem-gps]\nassistance-server=https://a.example/x\n"))
        #expect(error.line == 2)
        #expect(
            error.problem
                == .unknownKey(known: [
                    "enable", "assistance", "assistance-servers", "assistance-metered", "supl-server",
                ]))
    }

    static func error(_ text: String) -> ConfigurationError? {
        do {
            _ = try Configuration.parse(text, file: "c.conf")
            return nil
        } catch {
            return error
        }
    }
}
