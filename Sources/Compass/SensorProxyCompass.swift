import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders

/// The compass iio-sensor-proxy serves (`net.hadess.SensorProxy.Compass` at `/net/hadess/SensorProxy/Compass`),
/// on the daemon's own bus connection: `[compass] enable=true`.
///
/// It gives no positions, only headings (``onHeading``), which the locator puts on the other providers' fixes;
/// like a satellite receiver it runs only while an exact client does. Running, it claims the compass
/// (`ClaimCompass`) once iio-sensor-proxy is there and says `HasCompass`, and follows `CompassHeading` through
/// `PropertiesChanged`; stopped, it releases it (`ReleaseCompass`) and has no heading. iio-sensor-proxy is
/// followed by its bus name and never started: when it leaves the heading is gone, and when it comes back the
/// compass is claimed again if still wanted. Calls are answered on the bus thread without waiting there.
///
/// A heading that is not finite or not in 0...360 degrees is ignored, with a log line limited to a few every
/// ten seconds. iio-sensor-proxy sends a heading only while the compass is claimed and only when it changes, so
/// there is none until the first change after the claim; an older value of the property is never taken.
@BusActor
public final class SensorProxyCompass: CompassSource {
    /// iio-sensor-proxy's bus name.
    public static let busName = "net.hadess.SensorProxy"
    /// The compass object.
    public static let compassPath = ObjectPath("/net/hadess/SensorProxy/Compass")!
    /// The compass interface.
    public static let compassInterface = "net.hadess.SensorProxy.Compass"
    /// How long a call to iio-sensor-proxy may take.
    static let callTimeout = Duration.seconds(5)

    public let kind = ProviderKind.compass
    /// Always `.none`: the compass gives no positions.
    public var availableLevel: AccuracyLevel { .none }
    /// `.exact`: the compass is claimed only for clients served at exact accuracy.
    public let minimumClientLevel = AccuracyLevel.exact
    public var onFix: (@BusActor (Fix) -> Void)?
    public var onAvailabilityChanged: (@BusActor () -> Void)?
    /// Called whenever ``heading`` changes.
    public var onHeading: (@BusActor (Double?) -> Void)?
    /// The compass's heading, degrees clockwise from magnetic north in 0..<360; nil while it is not claimed or has
    /// not turned since the claim.
    public private(set) var heading: Double?

    private let connection: Connection
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private let follower: NameOwnerFollower
    /// True between ``start()`` and ``stop()``.
    private var wanted = false
    /// iio-sensor-proxy's `HasCompass`, read when it appears; nil until then and while it is not there.
    private var hasCompass: Bool?
    /// The owner whose compass is claimed (the claim answered), nil while none is.
    private var claimedFrom: String?
    /// True while a `ClaimCompass` waits for its answer; no second one is sent meanwhile, as iio-sensor-proxy keeps
    /// one claim per connection and one `ReleaseCompass` would undo both.
    private var claiming = false
    /// Counts iio-sensor-proxy's comings and goings, so that a `HasCompass` read from a gone owner is dropped.
    private var ownerGeneration = 0
    private var badReadingLog = RateLimiter<String>()

    /// A compass on `connection`; ``watch()`` begins following iio-sensor-proxy.
    public init(connection: Connection, clock: any WhereaboutsCore.Clock, logger: any Logger) {
        self.connection = connection
        self.clock = clock
        self.logger = logger
        follower = NameOwnerFollower(name: Self.busName, connection: connection, timeout: Self.callTimeout)
    }

    /// Subscribes to the compass's `PropertiesChanged` and to iio-sensor-proxy's comings and goings.
    public func watch() {
        follower.onChange = { [weak self] _ in self?.ownerChanged() }
        BusActor.task { [weak self] in
            guard let self else { return }
            do {
                _ = try await self.connection.subscribe(
                    SignalMatch(
                        sender: Self.busName, path: Self.compassPath, interface: "org.freedesktop.DBus.Properties",
                        member: "PropertiesChanged")
                ) { [weak self] message in self?.propertiesChanged(message) }
                try await self.follower.start()
            } catch {
                self.logger.error("compass: cannot follow \(Self.busName): \(error)")
                return
            }
            self.ownerChanged()
        }
    }

    public func start() {
        wanted = true
        claimIfWanted()
    }

    public func stop() {
        wanted = false
        if let owner = claimedFrom { release(from: owner) }
        claimedFrom = nil
        setHeading(nil)
    }

    /// Whether iio-sensor-proxy is there and has a compass, whether it is claimed, and the heading.
    public var details: [String: ProviderDetail] {
        var details: [String: ProviderDetail] = [
            "service": .flag(follower.owner != nil), "has-compass": .flag(hasCompass == true),
            "claimed": .flag(claimedFrom != nil),
        ]
        if let heading { details["heading"] = .text("\(heading)") }
        return details
    }

    /// True while iio-sensor-proxy is there with a compass.
    public var isAvailable: Bool { follower.owner != nil && hasCompass == true }

    private func ownerChanged() {
        ownerGeneration += 1
        claimedFrom = nil
        hasCompass = nil
        setHeading(nil)
        guard let owner = follower.owner else {
            logger.info("compass: \(Self.busName) is not on the bus; waiting for it")
            return
        }
        let generation = ownerGeneration
        BusActor.task { [weak self] in
            guard let self else { return }
            let has: Bool
            do {
                has = try await self.readHasCompass(from: owner)
            } catch {
                self.logger.warning("compass: cannot read HasCompass from \(Self.busName): \(error)")
                return
            }
            guard generation == self.ownerGeneration else { return }
            self.hasCompass = has
            if !has { self.logger.notice("compass: iio-sensor-proxy has no compass") }
            self.claimIfWanted()
        }
    }

    private func claimIfWanted() {
        guard wanted, !claiming, claimedFrom == nil, hasCompass == true, let owner = follower.owner else { return }
        claiming = true
        BusActor.task { [weak self] in
            guard let self else { return }
            do {
                _ = try await self.connection.call(
                    destination: owner, path: Self.compassPath, interface: Self.compassInterface,
                    member: "ClaimCompass", arguments: [], timeout: Self.callTimeout)
            } catch {
                self.claiming = false
                self.logger.warning("compass: iio-sensor-proxy refused ClaimCompass: \(error)")
                return
            }
            self.claiming = false
            guard self.wanted, self.follower.owner == owner, self.hasCompass == true else {
                // Stopped or gone meanwhile: undone, and claimed afresh from a new iio-sensor-proxy if wanted.
                self.release(from: owner)
                self.claimIfWanted()
                return
            }
            self.claimedFrom = owner
            self.logger.info("compass: claimed")
        }
    }

    private func release(from owner: String) {
        BusActor.task { [weak self] in
            guard let self else { return }
            do {
                _ = try await self.connection.call(
                    destination: owner, path: Self.compassPath, interface: Self.compassInterface,
                    member: "ReleaseCompass", arguments: [], timeout: Self.callTimeout)
                self.logger.info("compass: released")
            } catch {
                // Gone with iio-sensor-proxy, or refused: either way the claim is not held.
                self.logger.info("compass: ReleaseCompass: \(error)")
            }
        }
    }

    private func readHasCompass(from owner: String) async throws(DBusError) -> Bool {
        let reply = try await connection.call(
            destination: owner, path: Self.compassPath, interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(Self.compassInterface), .string("HasCompass")], timeout: Self.callTimeout)
        guard reply.count == 1, case .variant(let value) = reply[0], case .boolean(let has) = value.unwrapped else {
            throw .failed("iio-sensor-proxy answered Get(HasCompass) with (\(reply.map(\.signature).joined()))")
        }
        return has
    }

    private func propertiesChanged(_ message: Message) {
        guard let owner = follower.owner, message.sender == owner else { return }
        let arguments = message.arguments()
        guard arguments.count >= 2, arguments[0].string == Self.compassInterface,
            let changed = arguments[1].stringKeyedEntries
        else { return }
        if case .boolean(let has)? = changed["HasCompass"], has != hasCompass {
            hasCompass = has
            if !has {
                claimedFrom = nil
                setHeading(nil)
            }
            claimIfWanted()
        }
        guard claimedFrom == owner, let value = changed["CompassHeading"] else { return }
        guard let reading = value.double, let heading = HeadingCorrection.heading(fromReading: reading) else {
            if case .log(let suppressed) = badReadingLog.admit("heading", now: clock.monotonicNow) {
                let more = suppressed > 0 ? " (\(suppressed) more since the last)" : ""
                logger.warning("compass: ignored CompassHeading \(value), not a heading in 0...360 degrees\(more)")
            }
            return
        }
        setHeading(heading)
    }

    private func setHeading(_ new: Double?) {
        guard new != heading else { return }
        heading = new
        onHeading?(new)
    }
}
