@preconcurrency import Glibc
import Loop
import Whereabouts

/// A parsed command line.
struct Command: Sendable {
    enum Verb: Sendable { case watch, locate }

    var verb: Verb
    var desktopId = "whereabouts-cli"
    var level: UInt32 = 8
    var distance: UInt32 = 0
    var count: Int?
    var timeout: Double = 30
    var json = false

    static let usage = """
        Usage: whereabouts watch [--count N] [--distance METRES] [--accuracy LEVEL] [--desktop-id ID] [--json]
               whereabouts locate [--timeout SECONDS] [--accuracy LEVEL] [--desktop-id ID] [--json]

        watch    print fixes as they arrive (one JSON object per line with --json)
        locate   print one fix and exit

        LEVEL is GeoClue's accuracy level: 1 country, 4 city, 5 neighbourhood, 6 street, 8 exact (default).
        The service is reached on the system bus, or on the bus DBUS_SYSTEM_BUS_ADDRESS names.

        Exit status: 0 success, 1 the service refused or failed, 2 bad usage, 3 no fix before the timeout.

        """

    static func parseOrExit(_ arguments: [String]) -> Command {
        guard let first = arguments.first else { fail("a command is needed") }
        var command: Command
        switch first {
        case "watch": command = Command(verb: .watch)
        case "locate": command = Command(verb: .locate)
        case "--help", "-h", "help":
            print(usage, terminator: "")
            exit(0)
        default: fail("unknown command '\(first)'")
        }
        var remaining = arguments.dropFirst()
        while let option = remaining.popFirst() {
            func value() -> String {
                guard let next = remaining.popFirst() else { fail("\(option) needs a value") }
                return next
            }
            switch option {
            case "--json": command.json = true
            case "--desktop-id": command.desktopId = value()
            case "--accuracy": command.level = number(option, value())
            case "--distance": command.distance = number(option, value())
            case "--count": command.count = Int(number(option, value()))
            case "--timeout":
                let text = value()
                guard let seconds = Double(text), seconds > 0 else { fail("--timeout needs seconds, not '\(text)'") }
                command.timeout = seconds
            default: fail("unknown option '\(option)'")
            }
        }
        return command
    }

    private static func number(_ option: String, _ text: String) -> UInt32 {
        guard let value = UInt32(text) else { fail("\(option) needs a whole number, not '\(text)'") }
        return value
    }

    static func fail(_ message: String) -> Never {
        printError("whereabouts: \(message)\n\n\(usage)")
        exit(2)
    }

    @BusActor
    func run() {
        let client: LocationClient
        do {
            client = try LocationClient()
        } catch {
            printError("whereabouts: cannot reach the bus: \(error)\n")
            exit(1)
        }
        let limit = verb == .locate ? 1 : count
        if verb == .locate {
            EventLoop.main.schedule(after: .milliseconds(Int(timeout * 1000))) {
                printError("whereabouts: no location within \(timeout) s\n")
                exit(3)
            }
        }
        Task { @BusActor in
            var printed = 0
            do {
                for try await position in client.positions(desktopId: desktopId, level: level, distanceThreshold: distance) {
                    print(json ? Format.json(position) : Format.line(position))
                    fflush(stdout)
                    printed += 1
                    if let limit, printed >= limit { exit(0) }
                }
            } catch {
                printError("whereabouts: \(error)\n")
                exit(1)
            }
            exit(0)
        }
    }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    var copy = text
    _ = copy.withUTF8 { write(2, $0.baseAddress, $0.count) }
}
