import DBus
import Foundation
import Glibc
import Loop
import TestBasics
import TestSupport
import Testing

/// The state files and the configuration opened as what they must be: a FIFO, a directory or a symbolic link in
/// their place is refused with the file and the reason and moved aside, never read through, written through or
/// waited on; an oversized grants file is moved aside, not erased; one user's flood of decisions leaves another
/// user's grants intact across a restart.
@Suite("State files and the configuration, end to end")
struct StateFileTests {
    /// What is put in the place of a state file.
    enum Impostor: String, CaseIterable, Sendable {
        case fifo, directory, symlinkToFile, danglingSymlink

        /// The refusal the log names.
        var reason: String {
            switch self {
            case .fifo: "is a FIFO, not a regular file"
            case .directory: "is a directory, not a regular file"
            case .symlinkToFile, .danglingSymlink: "is a symbolic link, which is not followed"
            }
        }

        /// Makes it at `path`; a link to a file points at `secret`, which holds a valid state file's text.
        func make(at path: String, secret: String) throws {
            let made: Int32 =
                switch self {
                case .fifo: mkfifo(path, 0o600)
                case .directory: mkdir(path, 0o700)
                case .symlinkToFile: symlink(secret, path)
                case .danglingSymlink: symlink(secret + ".nowhere", path)
                }
            guard made == 0 else { throw TestEnvironmentError("cannot make \(self) at \(path): errno \(errno)") }
        }
    }

    /// A valid text for each state file, so that a link to it would be read if links were followed.
    static let validText = [
        "grants": "# whereabouts grants 1\n0\torg.example.Secret\talways\tprecise\n",
        "services": "enabled=true\n",
        "static-location": "48.8584\n2.2945\n35\n10\n",
    ]

    /// The size of the file at `path` in bytes, -1 when there is none.
    static func size(of path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : -1
    }

    /// The files in the harness folder whose names start with `prefix`.
    static func files(_ harness: DaemonHarness, startingWith prefix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: harness.directory.path).filter { $0.hasPrefix(prefix) }
    }

    @Test(arguments: ["grants", "services", "static-location"], Impostor.allCases)
    func aStateFileThatIsNotARegularFileIsRefusedAndMovedAside(name: String, impostor: Impostor) async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let secret = harness.file("secret-\(name)").path
        try write(Self.validText[name]!, to: URL(fileURLWithPath: secret))
        let path = harness.file(name).path
        try impostor.make(at: path, secret: secret)
        // A daemon waiting on a FIFO never owns the name: the harness gives up after 20 s.
        try await harness.launch()
        let log = harness.daemonLog
        #expect(log.contains("\(path): \(impostor.reason)"), "\(log)")
        #expect(!log.contains("org.example.Secret"), "\(log)")
        #expect(try Self.files(harness, startingWith: "\(name).corrupt-").count == 1, "\(log)")
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == Self.validText[name]!)
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        let enabled = try await app.get(
            GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "LocationServicesEnabled")
        // The switch fails closed; the others fail to their empty state.
        #expect(enabled == .boolean(name != "services"), "\(log)")
    }

    @Test func anOversizedGrantsFileIsMovedAsideNotErased() async throws {
        let harness = try DaemonHarness(config: staticConfig, files: ["geolocation": staticFile])
        defer { harness.stop() }
        let app = String(repeating: "o", count: 200)
        var text = "# whereabouts grants 1\n"
        var index = 0
        while text.utf8.count <= 16 << 20 {
            text += "1000\t\(app)-\(index)\tdenied\t-\n"
            index += 1
        }
        try write(text, to: harness.file("grants"))
        try await harness.launch()
        let log = harness.daemonLog
        #expect(
            log.contains(
                "\(harness.file("grants").path): is \(text.utf8.count) bytes, more than the limit of \(16 << 20)"),
            "\(log)")
        let aside = try Self.files(harness, startingWith: "grants.corrupt-")
        #expect(aside.count == 1, "\(log)")
        #expect(
            aside.first.map { Self.size(of: harness.file($0).path) } == text.utf8.count, "the file moved aside is whole"
        )
    }

    /// A decision of root's seeded and revoked, so that the daemon saves the grants once.
    static let seeded = "# whereabouts grants 1\n0\torg.example.Revoked\talways\tprecise\n"

    @Test(arguments: [Impostor.fifo, .symlinkToFile])
    func aTemporaryFileInTheWayIsNeitherWrittenThroughNorWaitedOn(impostor: Impostor) async throws {
        let harness = try DaemonHarness(
            config: staticConfig, files: ["geolocation": staticFile, "grants": Self.seeded])
        defer { harness.stop() }
        let victim = harness.file("victim").path
        try write("precious\n", to: URL(fileURLWithPath: victim))
        try impostor.make(at: harness.file("grants.tmp").path, secret: victim)
        try await harness.launch()
        let app = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in app.close() } }
        _ = try await app.call(
            GeoClueTestClient.managerPath, "io.github.whereabouts1.Manager", "RevokeGrant",
            [.uint32(0), .string("org.example.Revoked")])
        try Wait.until("the revocation to be saved", timeout: 10) {
            (try? String(contentsOf: harness.file("grants"), encoding: .utf8)) == "# whereabouts grants 2\n"
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        var status = stat()
        #expect(lstat(harness.file("grants").path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG)
        // The bus thread is free: a new client is answered.
        let other = try await GeoClueTestClient(bus: harness.bus)
        defer { Task { @BusActor in other.close() } }
        _ = try await other.getClient()
    }

    @Test func aConfigurationThatIsAFIFOIsRefused() async throws {
        let harness = try DaemonHarness(config: staticConfig)
        defer { harness.stop() }
        let path = harness.file("fifo.conf").path
        #expect(mkfifo(path, 0o600) == 0)
        try await harness.launch(arguments: ["--config", path, "--timeout", "0"], waitForName: false)
        let daemon = try #require(harness.daemon)
        _ = try await daemon.exited(within: 20)
        #expect(daemon.exitCode == 1, "\(daemon.log)")
        #expect(daemon.log.contains("\(path): is a FIFO, not a regular file"), "\(daemon.log)")
    }

    @Test func anOversizedConfigurationIsRefusedWithItsSize() async throws {
        let harness = try DaemonHarness(config: staticConfig + "\n" + String(repeating: "# padding\n", count: 110_000))
        defer { harness.stop() }
        let size = Self.size(of: harness.configFile.path)
        try await harness.launch(waitForName: false)
        let daemon = try #require(harness.daemon)
        _ = try await daemon.exited(within: 20)
        #expect(daemon.exitCode == 1, "\(daemon.log)")
        #expect(
            daemon.log.contains("\(harness.configFile.path): is \(size) bytes, more than the limit of 1048576"),
            "\(daemon.log)")
    }

    @Test func aConfigurationThatIsNotUTF8IsRefusedAtItsLine() async throws {
        let harness = try DaemonHarness(config: staticConfig)
        defer { harness.stop() }
        try write(Array("[agent]\nwhitelist=gnome-shell\n# caf".utf8) + [0xE9, 0x0A], to: harness.configFile)
        try await harness.launch(waitForName: false)
        let daemon = try #require(harness.daemon)
        _ = try await daemon.exited(within: 20)
        #expect(daemon.exitCode == 1, "\(daemon.log)")
        #expect(daemon.log.contains("\(harness.configFile.path):3: the line is not valid UTF-8"), "\(daemon.log)")
    }

    @Test func aKeyGivenTwiceIsAWarningNamingBothLines() async throws {
        let harness = try DaemonHarness(
            config:
                "[agent]\nwhitelist=gnome-shell\n\n[authorisation]\npolkit=true\npolkit=false\ngrants=@DIR@/grants\n")
        defer { harness.stop() }
        try await harness.launch()
        let log = harness.daemonLog
        #expect(
            log.contains(
                "\(harness.configFile.path):6: key 'polkit' in [authorisation]: given again; this value replaces the one on line 5"
            ), "\(log)")
    }

    /// Refuses every Whereabouts action to nobody's interactive requests: each ends in a stored refusal.
    static let authSelf = [
        "10-test.rules": """
        polkit.addRule(function(action, subject) {
            if (action.id.indexOf("io.github.whereabouts1.") == 0 && subject.user == "nobody") {
                return polkit.Result.AUTH_SELF;
            }
        });
        """
    ]

    static let victimLine = "1000\torg.example.Victim\talways\tprecise\n"

    /// polkitd (``authSelf``) and the daemon asking it on a bus of their own, started with `text` as its grants
    /// file.
    static func daemon(withGrants text: String) throws -> (PolkitHarness, DaemonHarness) {
        let bus = try PolkitHarness.makeBus()
        let polkit = try PolkitHarness(bus: bus, rules: authSelf)
        do {
            let harness = try DaemonHarness(
                config: staticConfig, files: ["geolocation": staticFile], polkit: true, bus: bus)
            try write(text, to: harness.file("grants"))
            try harness.startDaemon()
            return (polkit, harness)
        } catch {
            polkit.stop()
            bus.stop()
            throw error
        }
    }

    @Test func oneUsersFloodOfDecisionsLeavesAnotherUsersGrantsAcrossARestart() async throws {
        // nobody has already filled the file to within a few lines of the reader's 16 MiB (as a flood of 5,805
        // decisions a minute does in an hour); a few more decisions would carry it past.
        let limit = 16 << 20
        var text = "# whereabouts grants 1\n" + Self.victimLine
        let app = String(repeating: "f", count: 230)
        var index = 0
        while text.utf8.count + 600 < limit {
            text += "65534\t\(app)-\(index)\tdenied\t-\n"
            index += 1
        }
        let (polkit, harness) = try Self.daemon(withGrants: text)
        defer {
            harness.stop()
            polkit.stop()
        }
        let cli = try ProjectPaths.product("whereabouts").path
        for round in 0..<4 {
            _ = try polkit.run([cli, "authorise", "--desktop-id", "\(app)-new-\(round)"])
        }
        harness.daemon?.stop()
        try harness.startDaemon()
        _ = try polkit.run([cli, "authorise", "--desktop-id", "after-the-restart"])
        harness.daemon?.stop()
        let log = harness.daemonLog
        let after = try String(contentsOf: harness.file("grants"), encoding: .utf8)
        #expect(after.contains("\n" + Self.victimLine), "the other user's grant is gone:\n\(log)")
        #expect(after.utf8.count <= limit)
        #expect(!after.contains("\(app)-new-"), "decisions past nobody's share were stored")
        #expect(!log.contains("starting with no stored decisions"), "\(log)")
    }

    @Test func aUserAtTheirShareCannotStoreOneMore() async throws {
        var text = "# whereabouts grants 1\n" + Self.victimLine
        for index in 0..<1000 { text += "65534\tapp-\(index)\tdenied\t-\n" }
        let (polkit, harness) = try Self.daemon(withGrants: text)
        defer {
            harness.stop()
            polkit.stop()
        }
        let cli = try ProjectPaths.product("whereabouts").path
        let refused = try polkit.run([cli, "authorise", "--desktop-id", "one-more"])
        let check = try polkit.run([cli, "authorise", "--check", "--desktop-id", "one-more"])
        #expect(check.output.contains("notDetermined"), "\(refused.output)\n\(check.output)\n\(harness.daemonLog)")
        // An app already decided about can still be decided again, and the file keeps everyone's.
        _ = try polkit.run([cli, "authorise", "--desktop-id", "app-0"])
        try Wait.until("the grants to be written", timeout: 10) {
            let after = (try? String(contentsOf: harness.file("grants"), encoding: .utf8)) ?? ""
            return after.contains("\n" + Self.victimLine) && after.contains("\tapp-999\t")
        }
        let after = try String(contentsOf: harness.file("grants"), encoding: .utf8)
        #expect(!after.contains("\tone-more\t"), "\(after.suffix(200))")
    }
}
