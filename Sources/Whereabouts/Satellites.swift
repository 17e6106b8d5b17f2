import DBus
import Loop
import WhereaboutsCore

/// One satellite the service's receivers see: an entry of `io.github.whereabouts1.Client.Satellites`.
public struct SatelliteInView: Sendable, Equatable {
    /// `gps`, `glonass`, `galileo`, `beidou`, `qzss`, `navic` or `sbas`.
    public var constellation: String
    /// Its id within the constellation (the PRN; GLONASS's slot; SBAS's PRN, 120 to 158; QZSS 1 to 10).
    public var id: UInt32
    /// Degrees above the horizon; nil when the receiver does not know it.
    public var elevation: Double?
    /// Degrees clockwise from true north; nil when the receiver does not know it.
    public var azimuth: Double?
    /// Carrier-to-noise density, dB-Hz; nil while the satellite is not tracked.
    public var signalStrength: Double?
    /// True when the fix uses it.
    public var usedInFix: Bool

    /// A satellite from its fields.
    public init(
        constellation: String, id: UInt32, elevation: Double?, azimuth: Double?, signalStrength: Double?,
        usedInFix: Bool
    ) {
        self.constellation = constellation
        self.id = id
        self.elevation = elevation
        self.azimuth = azimuth
        self.signalStrength = signalStrength
        self.usedInFix = usedInFix
    }

    /// The satellites of an `a(sudddb)` value; NaN stands for unknown.
    static func sky(_ value: DBusValue) -> [SatelliteInView] {
        func known(_ value: DBusValue) -> Double? { value.double.flatMap { $0.isNaN ? nil : $0 } }
        return (value.elements ?? []).compactMap { entry in
            guard let fields = entry.fields, fields.count == 6, let constellation = fields[0].string,
                let id = fields[1].uint32, let used = fields[5].bool
            else { return nil }
            return SatelliteInView(
                constellation: constellation, id: id, elevation: known(fields[2]), azimuth: known(fields[3]),
                signalStrength: known(fields[4]), usedInFix: used)
        }
    }
}

extension LocationManager {
    /// The satellites the service's receivers see, then the sky again at each change (`SatellitesChanged`, at most
    /// once a second), until the sequence is dropped or fails: through a client of its own started at exact level
    /// (`Satellites` of `io.github.whereabouts1.Client`), which starts the receivers. An app not let in at exact
    /// level ends it with ``LocationError/permissionDenied(_:)``; a plain GeoClue with
    /// ``LocationError/unsupported(_:)``.
    public func satellites() -> AsyncThrowingStream<[SatelliteInView], any Error> {
        AsyncThrowingStream { continuation in
            produce(continuation) { () async throws(LocationError) in
                guard try await self.isWhereabouts() else { throw .unsupported("the satellites in view") }
                let (ended, endInput) = AsyncStream.makeStream(of: Never.self)
                continuation.onTermination = { _ in endInput.finish() }
                let client = try await self.makeClient(accuracy: .exact)
                var signalled = false
                let subscription = try await self.subscribeToService(
                    SignalMatch(path: client, interface: Self.client, member: "SatellitesChanged")
                ) { message in
                    guard let value = message.arguments().first else { return }
                    signalled = true
                    continuation.yield(SatelliteInView.sky(value))
                }
                defer { self.end(client, [subscription]) }
                _ = try await self.call(client, Self.geoClueClient, "Start")
                let current = try await self.get(client, Self.client, "Satellites")
                // A change signalled meanwhile is newer than the value read.
                if !signalled { continuation.yield(SatelliteInView.sky(current)) }
                for await _ in ended {}
            }
        }
    }
}
