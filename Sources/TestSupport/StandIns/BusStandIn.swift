import Foundation
import Glibc
import TestBasics

/// A stand-in for a system service on a ``PrivateBus``: a Python program (python-dbusmock with a template, or a
/// script of the project's) owning the service's bus name, driven with `busctl`. The mocks of logind,
/// NetworkManager, wpa_supplicant and ModemManager each run one.
public struct BusStandIn {
    /// Debian's Python, which has the `python3-dbusmock` package (another `python3` on PATH may not).
    public static let python = URL(fileURLWithPath: "/usr/bin/python3")

    /// The bus the stand-in is on.
    public let bus: PrivateBus
    /// The stand-in's process.
    public let process: ChildProcess
    /// The bus name it owns.
    let busName: String
    /// What it is called in errors, as in `the logind mock`.
    let label: String

    /// Starts ``python`` with `arguments` on `bus`, logging to a file named after `logName`, and returns once the
    /// stand-in owns `busName`; `label` names it in errors.
    init(bus: PrivateBus, busName: String, label: String, arguments: [String], logName: String) throws {
        self.bus = bus
        self.busName = busName
        self.label = label
        let process = try ChildProcess(
            Self.python, arguments, environment: bus.environment,
            logFile: bus.directory.appendingPathComponent("\(logName)-\(UUID().uuidString).log"))
        self.process = process
        try Wait.until("\(label) to own \(busName)", timeout: 20) {
            guard process.isRunning else { throw TestEnvironmentError("\(label) exited:\n\(process.log)") }
            return try Self.busctl(bus, ["status", busName]).status == 0
        }
    }

    /// python-dbusmock with `template` (one of its own, or a file) and its `parameters` (JSON), once
    /// ``checkDbusmock(in:)`` found it; the rest as for ``init(bus:busName:label:arguments:logName:)``.
    static func dbusmock(
        bus: PrivateBus, busName: String, label: String, template: String, parameters: String? = nil, logName: String
    ) throws -> BusStandIn {
        try checkDbusmock(in: bus.directory)
        return try BusStandIn(
            bus: bus, busName: busName, label: label,
            arguments: ["-m", "dbusmock", "--template", template] + (parameters.map { ["-p", $0] } ?? []),
            logName: logName)
    }

    /// Bus policy letting root own `name` and everyone call it, as a service's own policy file does.
    public static func policy(owning name: String) -> String {
        """
        <policy user="root">
          <allow own="\(name)"/>
        </policy>
        <policy context="default">
          <allow send_destination="\(name)"/>
        </policy>
        """
    }

    /// Calls `member` of `interface` on the object at `path` of the stand-in and returns busctl's answer.
    @discardableResult
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [String]) throws -> String {
        // `--` ends busctl's options, so that negative numbers are taken as values.
        let result = try Self.busctl(bus, ["call", "--", busName, path, interface, member] + arguments)
        guard result.status == 0 else {
            throw TestEnvironmentError("\(member) on \(label) failed: \(result.output)\n\(process.log)")
        }
        return result.output
    }

    /// Stops the stand-in: the service leaves the bus.
    func stop() {
        process.stop(grace: 2)
    }

    /// The object path busctl answered, a single value of one of `types` (`o`, or `s` for a path sent as a string).
    static func objectPath(_ output: String, types: Set<Substring> = ["o"]) throws -> String {
        let words = output.split(whereSeparator: \.isWhitespace)
        guard words.count == 2, types.contains(words[0]) else {
            throw TestEnvironmentError("expected an object path, got \(output)")
        }
        return String(words[1].dropFirst().dropLast())
    }

    /// Fails with a clear message unless ``python`` has python-dbusmock and GLib's bindings.
    static func checkDbusmock(in directory: URL) throws {
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw TestEnvironmentError("\(python.path) is not installed; install python3-dbusmock")
        }
        let check = try Unprivileged.run(
            [python.path, "-c", "import dbus, dbusmock; from gi.repository import GLib"], asUser: nil,
            environment: ProcessInfo.processInfo.environment, in: directory, timeout: 30)
        guard check.status == 0 else {
            throw TestEnvironmentError(
                "python-dbusmock is missing from \(python.path); install python3-dbusmock "
                    + "(apt-get install python3-dbusmock):\n\(check.output)")
        }
    }

    /// Runs `busctl --address=BUS ARGUMENTS`.
    public static func busctl(_ bus: PrivateBus, _ arguments: [String]) throws -> CommandResult {
        try Unprivileged.run(
            [try Executables.find("busctl").path, "--address=\(bus.address)"] + arguments, asUser: nil,
            environment: bus.environment, in: bus.directory, timeout: 20)
    }
}

/// A mock of a system service that runs a ``BusStandIn``, whose bus and process it shows and which it stops.
public protocol BusServiceMock: AnyObject {
    /// The stand-in serving the mock's bus name.
    var standIn: BusStandIn { get }
}

extension BusServiceMock {
    /// The bus the mock is on.
    public var bus: PrivateBus { standIn.bus }
    /// The mock's process.
    public var process: ChildProcess { standIn.process }

    /// Stops the mock: the service leaves the bus.
    public func stop() {
        standIn.stop()
    }
}
