import DBus
import Loop
import TestBasics

// What the provider tests observe through a GeoClue test client: the Manager's announced levels, the Location
// objects as they are announced, and when each LocationUpdated arrived.

extension GeoClueTestClient {
    /// The `AvailableAccuracyLevel` values the Manager announced with `PropertiesChanged`, in order.
    public var announcedAvailableLevels: [UInt32] {
        signals.compactMap { message in
            guard message.member == "PropertiesChanged", message.path == GeoClueTestClient.managerPath else {
                return nil
            }
            let arguments = message.arguments()
            guard arguments.first?.string == GeoClueTestClient.managerInterface else { return nil }
            return arguments[1].stringKeyedEntries?["AvailableAccuracyLevel"]?.uint32
        }
    }

    /// `Manager.AvailableAccuracyLevel`, read now.
    public func availableLevel() async throws -> UInt32? {
        try await get(GeoClueTestClient.managerPath, GeoClueTestClient.managerInterface, "AvailableAccuracyLevel")
            .uint32
    }

    /// The properties of the Location object that the latest `LocationUpdated` announced; nil before the first. One
    /// that newer fixes released before the read arrived (a client keeps only its newest few) is passed over for the
    /// newest then.
    public func latestLocation() async throws -> [String: DBusValue]? {
        while true {
            guard let latest = locationUpdates.last else { return nil }
            let failure: DBusError
            do {
                return try await getAll(latest.new, GeoClueTestClient.locationInterface)
            } catch {
                failure = error
            }
            // Released meanwhile because newer fixes came (a client keeps its newest few): read the newest again.
            guard failure.name == DBusError.Name.unknownMethod, locationUpdates.last?.new != latest.new else {
                throw failure
            }
        }
    }

    /// The properties of each Location object as its `LocationUpdated` arrives, read at once, for the first
    /// `count` updates. A client keeps only its newest few objects, so a test process that falls far behind
    /// misses some (nil); any failure but "released" is thrown.
    /// With `untilRead`, reading stops as soon as that many objects were read, up to `count` updates: a test
    /// starved for seconds on a loaded machine then goes on reading the updates that follow instead of failing.
    public func readLocations(
        count: Int, untilRead wanted: Int? = nil, timeout: Duration = .seconds(30)
    ) async throws -> [[String: DBusValue]?] {
        var values: [[String: DBusValue]?] = []
        let deadline = ContinuousClock.now + timeout
        while values.count < count, values.compactMap({ $0 }).count < wanted ?? count {
            let updates = locationUpdates
            guard values.count < updates.count else {
                guard ContinuousClock.now < deadline else {
                    throw TestEnvironmentError(
                        "only \(updates.count) of \(count) LocationUpdated signals in \(timeout)")
                }
                try await Task.sleep(for: .milliseconds(2))
                continue
            }
            if updates.count - values.count > 4 {
                values.append(nil)
                continue
            }
            let failure: DBusError
            do {
                values.append(try await getAll(updates[values.count].new, GeoClueTestClient.locationInterface))
                continue
            } catch {
                failure = error
            }
            guard failure.name == DBusError.Name.unknownMethod else { throw failure }
            values.append(nil)
        }
        return values
    }
}

/// Records the monotonic time at which each `LocationUpdated` reached a connection, for latency figures.
@BusActor
public final class UpdateArrivals {
    /// Monotonic nanoseconds of each arrival, in order.
    public private(set) var times: [Int64] = []

    /// Starts recording on `client`'s connection.
    public init(_ client: GeoClueTestClient) async throws {
        _ = try await client.connection.subscribe(
            SignalMatch(interface: GeoClueTestClient.clientInterface, member: "LocationUpdated")
        ) { [weak self] _ in self?.times.append(monotonicNanoseconds()) }
    }
}

/// A `Timestamp` property value, `(tt)`, in seconds since the epoch.
public func locationTimestamp(_ value: DBusValue?) -> Double? {
    guard let fields = value?.fields, fields.count == 2, let seconds = fields[0].uint64, let micro = fields[1].uint64
    else { return nil }
    return Double(seconds) + Double(micro) / 1e6
}
