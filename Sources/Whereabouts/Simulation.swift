import DBus
import Loop
import WhereaboutsCore

/// Why a simulation ended (`io.github.whereabouts1.Manager.SimulationEnded`).
public enum SimulationEnd: String, Sendable {
    /// The track played to its end.
    case finished
    /// It was stopped (`StopSimulation`, by its owner or an administrator).
    case stopped
    /// Another simulation took its place.
    case replaced
}

extension LocationManager {
    /// Plays a recorded track (NMEA or GPX text) in the place of every provider, its fixes marked simulated, and
    /// returns when it ends (`io.github.whereabouts1.Manager.Simulate`, then `SimulationEnded`). Cancelling the
    /// task stops it. Needs the management authorisation; Whereabouts only.
    public func simulate(track: String, name: String, speed: Double = 1, loops: Bool = false)
        async throws(LocationError) -> SimulationEnd
    {
        guard try await isWhereabouts() else { throw .unsupported("simulated locations") }
        let ending = SimulationEnding()
        let subscription = try await subscribeToService(
            SignalMatch(path: Self.managerPath, interface: Self.manager, member: "SimulationEnded")
        ) { message in
            ending.finish(SimulationEnd(rawValue: message.arguments().first?.string ?? "") ?? .stopped)
        }
        defer { connection.unsubscribe(subscription) }
        let options: [String: DBusValue] = ["speed": .double(speed), "loop": .boolean(loops), "name": .string(name)]
        _ = try await callManager("Simulate", [.string(track), .vardict(options)])
        return await withTaskCancellationHandler {
            await ending.wait()
        } onCancel: {
            Task { @BusActor in
                _ = try? await self.callManager("StopSimulation", [])
                ending.finish(.stopped)
            }
        }
    }
}

/// The end of a simulation, awaited once.
@BusActor
final class SimulationEnding {
    private var result: SimulationEnd?
    private var waiter: CheckedContinuation<SimulationEnd, Never>?

    func finish(_ end: SimulationEnd) {
        guard result == nil else { return }
        result = end
        waiter?.resume(returning: end)
        waiter = nil
    }

    func wait() async -> SimulationEnd {
        if let result { return result }
        return await withCheckedContinuation { waiter = $0 }
    }
}
