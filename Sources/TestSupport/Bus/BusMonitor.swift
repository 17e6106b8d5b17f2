import Foundation
import Glibc
import TestBasics

/// One message a ``BusMonitor`` saw on the bus.
public struct BusMessage: Sendable, Equatable {
    /// The D-Bus message type.
    public enum Kind: String, Sendable {
        case methodCall = "method_call"
        case methodReturn = "method_return"
        case error
        case signal
    }

    public let kind: Kind
    /// The sender's unique name, or `org.freedesktop.DBus` for the bus itself.
    public let sender: String
    /// The destination; nil for a broadcast signal.
    public let destination: String?
    public let path: String?
    public let interface: String?
    public let member: String?
    /// The error name of an error.
    public let errorName: String?
    /// The sender's serial for this message.
    public let cookie: UInt64
    /// The serial of the call a return or error answers.
    public let replyCookie: UInt64?
    /// The body's top-level string arguments (a bus name, a match rule), in order.
    public let strings: [String]
    /// For a return or error, `interface.member` of the call it answers, when the monitor saw that call.
    public let answers: String?
    /// For `org.freedesktop.DBus.Properties.PropertiesChanged`, the names of the changed properties, sorted.
    public let changedProperties: [String]

    /// `interface.member` of a call or signal, `→ interface.member` of a return, `→ interface.member !error` of an
    /// error.
    public var label: String {
        switch kind {
        case .methodCall, .signal: return "\(interface ?? "").\(member ?? "")"
        case .methodReturn: return "→ \(answers ?? "?")"
        case .error: return "→ \(answers ?? "?") !\(errorName ?? "")"
        }
    }
}

/// Every message on a ``PrivateBus``, as `busctl monitor` sees it through `org.freedesktop.DBus.Monitoring`: run
/// as root, it records the messages between ``start()`` and ``stop()``, whoever sends them and to whomever. A
/// broadcast signal is one message however many connections receive it; the monitor's own connection sends
/// nothing once it monitors. The bus must let root become a monitor: pass ``busPolicy`` to
/// `PrivateBus(extraPolicy:)`.
public final class BusMonitor: @unchecked Sendable {
    /// Bus policy letting root call `org.freedesktop.DBus.Monitoring.BecomeMonitor`, which the system bus's
    /// default policy, as the private bus copies it, denies.
    public static let busPolicy = """
        <policy user="root">
          <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
        </policy>
        """

    /// The bus watched.
    public let bus: PrivateBus
    private var process: ChildProcess?
    private let logFile: URL

    /// A monitor of `bus`; call ``start()``.
    public init(bus: PrivateBus) {
        self.bus = bus
        logFile = bus.directory.appendingPathComponent("monitor-\(UUID().uuidString.prefix(8)).json")
    }

    /// Starts `busctl monitor` and returns once the bus has made it a monitor.
    public func start() throws {
        let busctl = try Executables.find("busctl")
        let process = try ChildProcess(
            busctl, ["--address=\(bus.address)", "monitor", "--json=short"], logFile: logFile)
        self.process = process
        try Wait.until("busctl to monitor the bus", timeout: 10) {
            guard process.isRunning else { throw TestEnvironmentError("busctl monitor exited:\n\(process.log)") }
            return process.log.contains("Monitoring bus message stream.")
        }
    }

    /// The messages recorded so far, in the order the bus routed them.
    public var messages: [BusMessage] {
        guard let log = process?.log else { return [] }
        var parsed: [BusMessage] = []
        for line in log.split(separator: "\n") where line.hasPrefix("{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let message = BusMonitor.message(object, earlier: parsed)
            else { continue }
            parsed.append(message)
        }
        return parsed
    }

    /// Waits until no message has arrived for `quiet` seconds (at most `timeout` seconds in all), so that what a
    /// finished exchange set off has reached the monitor.
    public func settle(quiet: Double = 1, timeout: Double = 20) throws {
        var count = -1
        var since = ContinuousClock.now
        try Wait.until("the bus to fall quiet", timeout: timeout) {
            let now = messages.count
            if now != count {
                count = now
                since = ContinuousClock.now
            }
            return ContinuousClock.now - since >= .seconds(quiet)
        }
    }

    /// Stops the monitor and returns what it recorded.
    @discardableResult
    public func stop() -> [BusMessage] {
        let recorded = messages
        process?.stop(grace: 1)
        process = nil
        return recorded
    }

    /// The unique names connected to `bus` now and the process of each, as `busctl list` gives them. Listing
    /// sends messages of its own: call it outside a recording.
    public static func connections(on bus: PrivateBus) throws -> [String: pid_t] {
        let result = try Unprivileged.run(
            [try Executables.find("busctl").path, "--address=\(bus.address)", "list", "--unique", "--json=short"],
            asUser: nil, environment: bus.environment, in: bus.directory, timeout: 10)
        guard result.status == 0, let start = result.output.firstIndex(of: "["),
            let rows = try? JSONSerialization.jsonObject(with: Data(result.output[start...].utf8)) as? [[String: Any]]
        else { throw TestEnvironmentError("busctl list failed:\n\(result.output)") }
        var names: [String: pid_t] = [:]
        for row in rows {
            if let name = row["name"] as? String, let pid = row["pid"] as? Int { names[name] = pid_t(pid) }
        }
        return names
    }

    /// The message `busctl monitor` printed as `object`; a return or error is matched with the call it answers
    /// among `earlier`.
    private static func message(_ object: [String: Any], earlier: [BusMessage]) -> BusMessage? {
        guard let type = object["type"] as? String, let kind = BusMessage.Kind(rawValue: type) else { return nil }
        let sender = object["sender"] as? String ?? ""
        let destination = object["destination"] as? String
        let replyCookie = (object["reply_cookie"] as? NSNumber)?.uint64Value
        var answers: String?
        if let replyCookie, let destination {
            answers = earlier.last {
                $0.kind == .methodCall && $0.cookie == replyCookie && $0.sender == destination
            }.map { "\($0.interface ?? "").\($0.member ?? "")" }
        }
        let data = (object["payload"] as? [String: Any])?["data"] as? [Any] ?? []
        let member = object["member"] as? String
        let changed = member == "PropertiesChanged" && data.count > 1 ? (data[1] as? [String: Any]) ?? [:] : [:]
        return BusMessage(
            kind: kind, sender: sender, destination: destination, path: object["path"] as? String,
            interface: object["interface"] as? String, member: member,
            errorName: object["error_name"] as? String, cookie: (object["cookie"] as? NSNumber)?.uint64Value ?? 0,
            replyCookie: replyCookie, strings: data.compactMap { $0 as? String }, answers: answers,
            changedProperties: changed.keys.sorted())
    }

    deinit { process?.stop(grace: 1) }
}
