@preconcurrency import Glibc
import Loop
import Whereabouts

/// A parsed command line.
struct Command: Sendable {
    enum Verb: Sendable {
        case locate, watch, last, status, services, authorise, grants, revoke, replay, setLocation, clearLocation
        case regionAdd, regionList, regionRemove, regionWatch, satellites, history
    }

    var verb: Verb
    var desktopId = "whereabouts-cli"
    var accuracy = Accuracy.exact
    var highAccuracy = true
    var distance = 0.0
    var count: Int?
    var timeout = 5.0
    var maximumAge: Double?
    var json = false
    var always = false
    var approximate = false
    var checkOnly = false
    var watchStatus = false
    var allUsers = false
    var uid: UInt32?
    var app: String?
    /// `services on|off`: the switch to set; nil prints it.
    var switchTo: Bool?
    /// `replay FILE`: the recorded track.
    var file: String?
    var speed = 1.0
    var loop = false
    /// `set-location LATITUDE LONGITUDE`.
    var coordinates: (latitude: Double, longitude: Double)?
    var altitude = 0.0
    var locationAccuracy = 100.0
    /// `region add ID LATITUDE LONGITUDE RADIUS`, with its options.
    var region: Region?
    /// `region remove ID`.
    var regionId: String?
    /// `history --since`: Unix milliseconds.
    var since: Int64 = 0
    /// `history --clear`.
    var clear = false

    static let usage = """
        Usage: whereabouts locate [--timeout SECONDS] [--max-age SECONDS] [OPTIONS]
               whereabouts watch [--count N] [--distance METRES] [OPTIONS]
               whereabouts last [OPTIONS]
               whereabouts satellites [--count N] [--json] [--desktop-id ID]
               whereabouts status
               whereabouts services [on|off]
               whereabouts authorise [--always] [--approximate] [--check [--watch]] [OPTIONS]
               whereabouts grants [--all]
               whereabouts revoke APP [--uid UID]
               whereabouts history [--since DURATION|DATE] [--all] [--json]
               whereabouts history --clear [--uid UID]
               whereabouts replay FILE [--speed FACTOR] [--loop]
               whereabouts set-location LATITUDE LONGITUDE [--altitude METRES] [--radius METRES]
               whereabouts clear-location
               whereabouts region add ID LATITUDE LONGITUDE RADIUS [--dwell SECONDS] [--expires UNIX_SECONDS]
                              [--no-entry] [--no-exit] [--desktop-id ID]
               whereabouts region list [--json] [--desktop-id ID]
               whereabouts region remove ID [--desktop-id ID]
               whereabouts region watch [--json] [--desktop-id ID]

        locate   print one fix (default timeout 5 s; --max-age accepts a cached fix that recent)
        watch    print fixes as they arrive
        last     print the last known location, however old, without starting anything
        satellites  print the satellites the receivers see (needs exact level), then the sky at each change (at
                 most once a second), until interrupted or --count skies: a line of how many are in view and
                 used, then one a satellite (constellation, id, elevation and azimuth in degrees, C/N0 in dB-Hz,
                 "used"); --json prints each sky as one array of objects: constellation, id, elevation, azimuth,
                 cn0, used (unknown values null)
        status   print whether location services are on, the providers, availability and the apps using location
        services print whether location services are on; on or off switches them for everyone (needs the
                 management authorisation)
        authorise  ask the user (through polkit) to let the app (--desktop-id) have location when in use, or
                 --always; --approximate asks for approximate location only; --check only prints the status,
                 and with --watch every change of it too, until interrupted
        grants   list your stored decisions (--all: everyone's; needs the management authorisation)
        revoke   forget your decision about APP (--uid: another user's; needs the management authorisation)
        history  print which apps used location in the last 7 days (when, at which level, approximate or not, from
                 which providers; those going on last) and each request that left the machine for a positioning
                 service (host, how many access points and cells it carried, its outcome, the apps that needed
                 it); --since leaves out what ended before a DURATION ago (90s, 30m, 12h, 2d) or a DATE (local
                 YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]); --all prints every user's (needs the management
                 authorisation); --json prints one object an entry; --clear forgets your record (--uid: another
                 user's; needs the management authorisation)
        replay   play a recorded track (NMEA or GPX) in the place of every location source, its fixes marked
                 simulated, until it ends (--loop: until interrupted); --speed plays it faster (default 1);
                 needs the management authorisation
        set-location  serve this location (degrees; --radius: its accuracy, default 100 m) from the static
                 source for everyone, in the place of the configured file, until clear-location; both need the
                 management authorisation
        region   geofencing for the app (--desktop-id), which needs its "always" authorisation: add watches the
                 circle of RADIUS metres around LATITUDE LONGITUDE as ID (replacing the app's region ID) and
                 prints the radius watched (at least 100 m); --dwell also reports staying inside that long,
                 --expires removes it at that time, --no-entry and --no-exit leave out entering and leaving;
                 list prints the app's regions (ID, state, centre, radius, since, and the options given);
                 remove stops watching ID; watch prints the changes kept while no client of the app ran, then
                 each as it comes (ID, state, time, position, pending), until interrupted

        OPTIONS: --accuracy country|city|neighborhood|street|exact (or 1, 4, 5, 6, 8; default exact)
                 --low-power (no satellite receivers)  --desktop-id ID (default whereabouts-cli)
                 --json (one object per fix in the position format: latitude, longitude, altitude,
                 horizontalAccuracy, verticalAccuracy, course, speed, timestamp in ms, magneticHeading,
                 trueHeading, headingAccuracy; unknown values are null; region list: id, state, latitude,
                 longitude, radius, since in ms, notifyOnEntry, notifyOnExit, dwell in s, expires in Unix
                 seconds; region watch: id, state, timestamp in ms, latitude, longitude, accuracy, pending, or
                 for a region the service removed id, state "removed" and reason)

        The service is reached on the system bus, or on the bus DBUS_SYSTEM_BUS_ADDRESS names.

        Exit status: 0 success; 1 the service failed, refused the request or is absent; 2 bad usage; 3 no fix
        in time; 4 permission denied (for authorise: the app is not authorised); 5 location services disabled
        or no location available.

        """

    static func parseOrExit(_ arguments: [String]) -> Command {
        guard let first = arguments.first else { fail("a command is needed") }
        var command: Command
        /// The words after the command that are not options.
        var positional = 0
        switch first {
        case "locate": command = Command(verb: .locate)
        case "watch": command = Command(verb: .watch)
        case "last": command = Command(verb: .last)
        case "satellites": command = Command(verb: .satellites)
        case "status": command = Command(verb: .status)
        case "authorise", "authorize": command = Command(verb: .authorise)
        case "grants": command = Command(verb: .grants)
        case "history": command = Command(verb: .history)
        case "revoke":
            command = Command(verb: .revoke)
            guard arguments.count > 1, !arguments[1].hasPrefix("-") else { fail("revoke needs an app id") }
            command.app = arguments[1]
            positional = 1
        case "replay":
            command = Command(verb: .replay)
            guard arguments.count > 1, !arguments[1].hasPrefix("-") else { fail("replay needs a track file") }
            command.file = arguments[1]
            positional = 1
        case "set-location":
            command = Command(verb: .setLocation)
            guard arguments.count > 2, let latitude = Double(arguments[1]), let longitude = Double(arguments[2]) else {
                fail("set-location needs a latitude and a longitude in degrees")
            }
            command.coordinates = (latitude, longitude)
            positional = 2
        case "clear-location": command = Command(verb: .clearLocation)
        case "services":
            command = Command(verb: .services)
            if arguments.count > 1, !arguments[1].hasPrefix("-") {
                switch arguments[1] {
                case "on": command.switchTo = true
                case "off": command.switchTo = false
                default: fail("services takes on or off, not '\(arguments[1])'")
                }
                positional = 1
            }
        case "region":
            (command, positional) = region(Array(arguments.dropFirst()))
        case "--help", "-h", "help":
            print(usage, terminator: "")
            exit(0)
        default: fail("unknown command '\(first)'")
        }
        var remaining = arguments.dropFirst(1 + positional)
        while let option = remaining.popFirst() {
            func value() -> String {
                guard let next = remaining.popFirst() else { fail("\(option) needs a value") }
                return next
            }
            switch option {
            case "--json": command.json = true
            case "--always": command.always = true
            case "--approximate": command.approximate = true
            case "--check": command.checkOnly = true
            case "--watch": command.watchStatus = true
            case "--all": command.allUsers = true
            case "--since": command.since = since(value())
            case "--clear": command.clear = true
            case "--uid": command.uid = UInt32(seconds(option, value(), allowZero: true))
            case "--low-power": command.highAccuracy = false
            case "--desktop-id": command.desktopId = value()
            case "--accuracy": command.accuracy = level(value())
            case "--distance": command.distance = seconds(option, value(), allowZero: true)
            case "--count": command.count = Int(seconds(option, value(), allowZero: false))
            case "--timeout": command.timeout = seconds(option, value(), allowZero: false)
            case "--max-age": command.maximumAge = seconds(option, value(), allowZero: true)
            case "--speed": command.speed = seconds(option, value(), allowZero: false)
            case "--loop": command.loop = true
            case "--altitude":
                let text = value()
                guard let metres = Double(text), metres.isFinite else {
                    fail("--altitude needs a number of metres, not '\(text)'")
                }
                command.altitude = metres
            case "--radius": command.locationAccuracy = seconds(option, value(), allowZero: true)
            case "--dwell":
                command.region?.dwell = .seconds(min(seconds(option, value(), allowZero: false), Double(UInt32.max)))
            case "--expires":
                let text = value()
                guard let seconds = Int64(text), seconds > 0, seconds <= Int64.max / 1000 else {
                    fail("--expires needs a time in Unix seconds, not '\(text)'")
                }
                command.region?.expires = seconds * 1000
            case "--no-entry": command.region?.notifyOnEntry = false
            case "--no-exit": command.region?.notifyOnExit = false
            default: fail("unknown option '\(option)'")
            }
        }
        return command
    }

    /// `region SUBCOMMAND …`: the command, and how many words after `region` are not options.
    private static func region(_ arguments: [String]) -> (Command, Int) {
        switch arguments.first {
        case "add":
            guard arguments.count > 4, !arguments[1].hasPrefix("-") else {
                fail("region add needs an id, a latitude, a longitude and a radius")
            }
            func number(_ text: String, _ name: String) -> Double {
                guard let value = Double(text), value.isFinite else { fail("region add needs \(name), not '\(text)'") }
                return value
            }
            var command = Command(verb: .regionAdd)
            command.region = Region(
                id: arguments[1], latitude: number(arguments[2], "a latitude in degrees"),
                longitude: number(arguments[3], "a longitude in degrees"),
                radius: number(arguments[4], "a radius in metres"))
            return (command, 5)
        case "remove":
            guard arguments.count > 1, !arguments[1].hasPrefix("-") else { fail("region remove needs an id") }
            var command = Command(verb: .regionRemove)
            command.regionId = arguments[1]
            return (command, 2)
        case "list": return (Command(verb: .regionList), 1)
        case "watch": return (Command(verb: .regionWatch), 1)
        case let other?: fail("region takes add, list, remove or watch, not '\(other)'")
        case nil: fail("region needs add, list, remove or watch")
        }
    }

    private static func level(_ text: String) -> Accuracy {
        let names: [String: Accuracy] = [
            "country": .country, "city": .city, "neighborhood": .neighborhood, "neighbourhood": .neighborhood,
            "street": .street, "exact": .exact,
        ]
        if let named = names[text] { return named }
        guard let number = UInt32(text), let level = Accuracy(rawValue: number) else {
            fail("--accuracy takes country, city, neighborhood, street, exact or 1, 4, 5, 6, 8; not '\(text)'")
        }
        return level
    }

    /// `--since`'s value in Unix milliseconds: a duration ago (a number and `s`, `m`, `h` or `d`), or a local date
    /// and time (`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS`).
    private static func since(_ text: String) -> Int64 {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count.isFinite,
            count >= 0
        {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return Int64(now.tv_sec) * 1000 - Int64(min(count * unit, 1e12)) * 1000
        }
        let parts = text.split(whereSeparator: { $0 == "-" || $0 == "T" || $0 == ":" }).map { Int32($0) }
        guard [3, 5, 6].contains(parts.count), parts.allSatisfy({ $0 != nil }) else {
            fail("--since needs a duration (90s, 30m, 12h, 2d) or a date (YYYY-MM-DD[THH:MM[:SS]]), not '\(text)'")
        }
        let numbers = parts.map { $0! } + [0, 0, 0]
        var date = tm()
        date.tm_year = numbers[0] - 1900
        date.tm_mon = numbers[1] - 1
        date.tm_mday = numbers[2]
        date.tm_hour = numbers[3]
        date.tm_min = numbers[4]
        date.tm_sec = numbers[5]
        date.tm_isdst = -1
        let seconds = mktime(&date)
        guard seconds != -1 else { fail("--since: '\(text)' is no date") }
        return Int64(seconds) * 1000
    }

    private static func seconds(_ option: String, _ text: String, allowZero: Bool) -> Double {
        guard let value = Double(text), value.isFinite, value > 0 || (allowZero && value == 0) else {
            fail("\(option) needs a positive number, not '\(text)'")
        }
        return value
    }

    static func fail(_ message: String) -> Never {
        printError("whereabouts: \(message)\n\n\(usage)")
        exit(2)
    }

    @BusActor
    func run() {
        let manager: LocationManager
        do {
            manager = try LocationManager(desktopId: desktopId)
        } catch {
            finish(error)
        }
        Task { @BusActor in
            do throws(LocationError) {
                switch verb {
                case .locate:
                    let options = RequestOptions(
                        timeout: .milliseconds(Int(timeout * 1000)),
                        maximumAge: maximumAge.map { .milliseconds(Int($0 * 1000)) }, highAccuracy: highAccuracy,
                        accuracy: accuracy)
                    show(try await manager.requestLocation(options))
                case .last:
                    guard let position = try await manager.lastLocation() else {
                        printError("whereabouts: no location is known yet\n")
                        exit(5)
                    }
                    show(position)
                case .status:
                    print(Format.status(try await manager.status()), terminator: "")
                case .services:
                    if let switchTo { try await manager.setServicesEnabled(switchTo) }
                    print(try await manager.servicesEnabled() ? "on" : "off")
                case .replay:
                    let path = file!
                    let name = String(path.split(separator: "/").last ?? Substring(path))
                    let track = readTrack(path)
                    printError(
                        "whereabouts: replaying \(name) at \(speed)× speed\(loop ? ", looping" : ""); interrupt to stop\n"
                    )
                    let end = try await manager.simulate(track: track, name: name, speed: speed, loops: loop)
                    print("simulation \(end.rawValue)")
                case .setLocation:
                    let (latitude, longitude) = coordinates!
                    try await manager.setStaticLocation(
                        latitude: latitude, longitude: longitude, altitude: altitude, accuracy: locationAccuracy)
                case .clearLocation:
                    try await manager.clearStaticLocation()
                case .grants:
                    for grant in try await manager.grants(allUsers: allUsers) {
                        print(
                            "\(grant.uid)\t\(grant.app)\t\(grant.decision)\(grant.approximate ? "\tapproximate" : "")"
                                + (grant.verified ? "\tverified" : ""))
                    }
                case .revoke:
                    try await manager.revokeGrant(app: app!, uid: uid ?? getuid())
                case .history where clear:
                    try await manager.clearHistory(uid: uid ?? getuid())
                case .history:
                    let history = try await manager.history(since: since, allUsers: allUsers)
                    for line in json ? Format.json(history) : Format.lines(history, users: allUsers) { print(line) }
                case .authorise where checkOnly && watchStatus:
                    await follow(manager.authorisationStatuses()) { print($0.rawValue) }
                case .authorise:
                    let status =
                        checkOnly
                        ? try await manager.authorisationStatus()
                        : try await manager.requestAuthorisation(
                            always ? .always : .whenInUse, approximate: approximate)
                    print(status.rawValue)
                    exit(status == .authorisedAlways || status == .authorisedWhenInUse ? 0 : 4)
                case .regionAdd:
                    print(try await manager.addRegion(region!))
                case .regionRemove:
                    try await manager.removeRegion(regionId!)
                case .regionList:
                    for status in try await manager.regions() {
                        print(json ? Format.json(status) : Format.line(status))
                    }
                case .regionWatch:
                    await follow(manager.regionEvents()) { notice in
                        for line in json ? Format.json(notice) : Format.lines(notice) { print(line) }
                    }
                case .satellites:
                    await follow(manager.satellites(), count: count) { sky in
                        print(json ? Format.json(sky) : Format.lines(sky).joined(separator: "\n"))
                    }
                    await manager.endStreams()
                case .watch:
                    let configuration = MonitoringConfiguration(
                        accuracy: accuracy, highAccuracy: highAccuracy, minimumUpdateDistance: distance)
                    await follow(manager.locations(configuration), count: count) { show($0) }
                    await manager.endStreams()
                }
                exit(0)
            } catch {
                finish(error)
            }
        }
    }

    /// The text of the track file at `path`, read with the caller's own permissions; exits 1 when it cannot be read.
    private func readTrack(_ path: String) -> String {
        let limit = 8 << 20
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            printError("whereabouts: cannot open \(path): \(String(cString: strerror(errno)))\n")
            exit(1)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                printError("whereabouts: cannot read \(path): \(String(cString: strerror(errno)))\n")
                exit(1)
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            guard bytes.count <= limit else {
                printError("whereabouts: \(path) is longer than \(limit) bytes\n")
                exit(1)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            printError("whereabouts: \(path) is not UTF-8 text\n")
            exit(1)
        }
        return text
    }

    private func show(_ position: Position) {
        print(json ? Format.json(position) : Format.line(position))
        fflush(stdout)
    }

    /// Shows each element of `stream` with `show` as it comes, flushing standard output, until the stream ends or
    /// `count` elements were shown; a failure ends the command with its exit status (``finish(_:)``).
    @BusActor
    private func follow<Stream: AsyncSequence>(
        _ stream: Stream, count: Int? = nil, _ show: (Stream.Element) -> Void
    ) async {
        var shown = 0
        do {
            for try await element in stream {
                show(element)
                fflush(stdout)
                shown += 1
                if let count, shown >= count { return }
            }
        } catch let error as LocationError {
            finish(error)
        } catch {
            finish(.other(name: "", message: "\(error)"))
        }
    }

    private func finish(_ error: LocationError) -> Never {
        printError("whereabouts: \(error)\n")
        switch error {
        case .timeout: exit(3)
        case .permissionDenied: exit(4)
        case .servicesDisabled, .locationUnavailable: exit(5)
        default: exit(1)
        }
    }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    var copy = text
    _ = copy.withUTF8 { write(2, $0.baseAddress, $0.count) }
}
