import Glibc

/// The daemon's command line.
struct Options: Sendable {
    static let defaultConfigPath = "/etc/whereabouts/whereabouts.conf"

    /// The configuration file (`--config`).
    var configPath = Options.defaultConfigPath
    /// True when `--config` named the file, which must then exist.
    var configPathGiven = false
    /// Seconds without clients before exiting (`--timeout`); 0 = never. GeoClue's default is 60.
    var idleTimeout: UInt32 = 60

    static let usage = """
        Usage: whereaboutsd [--config PATH] [--timeout SECONDS] [--version]

        A GeoClue2-compatible location service on the system bus (or the bus DBUS_SYSTEM_BUS_ADDRESS names).

          --config PATH      read PATH instead of \(defaultConfigPath)
          --timeout SECONDS  exit after SECONDS without clients; 0 never exits (default 60)
          --version          print the version and exit
          --help             print this help and exit

        """

    /// Parses `arguments`, printing help, the version or an error and exiting where needed.
    static func parseOrExit(_ arguments: [String]) -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            let (name, inlineValue) = split(argument)
            switch name {
            case "--help", "-h":
                print(usage, terminator: "")
                exit(0)
            case "--version":
                print("whereaboutsd \(version)")
                exit(0)
            case "--config", "-c":
                options.configPath = value(for: name, inlineValue, &remaining)
                options.configPathGiven = true
            case "--timeout", "-t":
                let text = value(for: name, inlineValue, &remaining)
                guard let seconds = UInt32(text) else {
                    fail("--timeout needs a whole number of seconds, not '\(text)'")
                }
                options.idleTimeout = seconds
            default:
                fail("unknown option '\(argument)'")
            }
        }
        return options
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    private static func value(for name: String, _ inline: String?, _ remaining: inout ArraySlice<String>) -> String {
        if let inline { return inline }
        guard let next = remaining.popFirst() else { fail("\(name) needs a value") }
        return next
    }

    private static func fail(_ message: String) -> Never {
        var text = "whereaboutsd: \(message)\n\(usage)"
        _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}

/// The version reported by `--version`.
let version = "0.1.0"
