import DBus
import Loop
import WhereaboutsCore

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A wireless daemon answered with an error or with a reply of the wrong shape.
struct PeerFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Calls to one wireless daemon, addressed to its unique name, each with a timeout.
@BusActor
struct PeerCalls {
    let connection: Connection
    /// The daemon's name in log lines: `wpa_supplicant`, `NetworkManager`.
    let service: String
    let timeout: Duration

    /// Calls `member` on `owner` and returns the reply's arguments.
    func call(
        _ owner: String, _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) async throws(DBusError) -> [DBusValue] {
        try await connection.call(
            destination: owner, path: path, interface: interface, member: member, arguments: arguments,
            timeout: timeout)
    }

    /// One property, from `org.freedesktop.DBus.Properties.Get`, its variant unwrapped.
    func property(_ owner: String, _ path: ObjectPath, _ interface: String, _ name: String)
        async throws(PeerFailure) -> DBusValue
    {
        let reply: [DBusValue]
        do {
            reply = try await call(
                owner, path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
        } catch {
            throw PeerFailure("cannot read \(name) of \(path) from \(service): \(error)")
        }
        guard reply.count == 1, case .variant(let value) = reply[0] else {
            throw PeerFailure("\(service) answered Get(\(name)) on \(path) with (\(reply.map(\.signature).joined()))")
        }
        return value.unwrapped
    }

    /// Every property of `interface`, from `org.freedesktop.DBus.Properties.GetAll`, variants unwrapped.
    func allProperties(_ owner: String, _ path: ObjectPath, _ interface: String)
        async throws(PeerFailure) -> [String: DBusValue]
    {
        let reply: [DBusValue]
        do {
            reply = try await call(owner, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
        } catch {
            throw PeerFailure("cannot read \(path) from \(service): \(error)")
        }
        guard reply.count == 1, reply[0].signature == "a{sv}", let properties = reply[0].stringKeyedEntries else {
            throw PeerFailure("\(service) answered GetAll on \(path) with (\(reply.map(\.signature).joined()))")
        }
        return properties
    }
}

extension [String: DBusValue] {
    /// The property `name` as `read` takes it; fails, naming what it is, when it is missing or not a `signature`.
    func required<T>(_ name: String, _ signature: String, _ read: (DBusValue) -> T?) throws(PeerFailure) -> T {
        guard let value = try ifPresent(name, signature, read) else {
            throw PeerFailure("its \(name) is missing, not \(signature)")
        }
        return value
    }

    /// The property `name` as `read` takes it, nil when it is missing; fails, naming its type, when it is not a
    /// `signature`.
    func ifPresent<T>(_ name: String, _ signature: String, _ read: (DBusValue) -> T?) throws(PeerFailure) -> T? {
        guard let value = self[name] else { return nil }
        guard let taken = read(value) else { throw PeerFailure("its \(name) is \(value.signature), not \(signature)") }
        return taken
    }
}

extension DBusValue {
    /// The payload of an `ay`.
    var bytes: [UInt8]? {
        guard case .array(element: "y", let elements) = self else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard case .byte(let byte) = element else { return nil }
            result.append(byte)
        }
        return result
    }

    /// The payload of an `ao`.
    var objectPaths: [ObjectPath]? {
        guard case .array(element: "o", let elements) = self else { return nil }
        return elements.compactMap(\.objectPath)
    }
}

/// Runs `body` for every path, at most `width` calls at a time (a stock system bus lets one connection wait for
/// 128 replies at once), and returns the answers that are not nil, in the order of `paths`.
@BusActor
func concurrently<T: Sendable>(
    _ paths: [ObjectPath], atMost width: Int, _ body: @escaping @BusActor @Sendable (ObjectPath) async -> T?
) async -> [T] {
    var results: [T] = []
    var start = 0
    while start < paths.count {
        let batch = paths[start..<min(start + width, paths.count)]
        let tasks = batch.map { path in BusActor.task { await body(path) } }
        for task in tasks {
            if let value = await task.value { results.append(value) }
        }
        start += width
    }
    return results
}

/// Access points from several interfaces, each BSSID once: a radio that sees an access point better wins.
struct AccessPointUnion {
    private(set) var accessPoints: [AccessPoint] = []
    private var index: [BSSID: Int] = [:]

    mutating func add(_ points: [AccessPoint]) {
        for point in points {
            guard let existing = index[point.bssid] else {
                index[point.bssid] = accessPoints.count
                accessPoints.append(point)
                continue
            }
            let kept = accessPoints[existing]
            if point.signal > kept.signal
                || (point.signal == kept.signal
                    && (point.age ?? .seconds(Int64.max)) < (kept.age ?? .seconds(Int64.max)))
            {
                accessPoints[existing] = point
            }
        }
    }
}

/// Seconds since boot on `CLOCK_BOOTTIME`, which counts suspended time too: NetworkManager's `LastSeen` clock.
func bootTimeSeconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return Int64(now.tv_sec)
}
