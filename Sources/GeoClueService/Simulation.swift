import DBus
import Loop
import WhereaboutsCore

/// Why a recorded track cannot be simulated.
public struct SimulationError: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// Plays recorded tracks in place of the providers, for `io.github.whereabouts1.Manager.Simulate`; the
/// composition root gives one.
@BusActor
public protocol TrackSimulator: AnyObject {
    /// Reads a recorded track (NMEA or GPX text) named `name` for messages, to be played at `speed` times real
    /// time, once or looping; a bad track throws why.
    func prepare(track: String, name: String, speed: Double, loops: Bool) throws(SimulationError) -> any Simulation
}

/// A simulation ready to run.
@BusActor
public protocol Simulation: AnyObject {
    /// Puts the track in the place of every provider; `onFinished` is called when a track that does not loop has
    /// played its last fix.
    func start(onFinished: @escaping @BusActor () -> Void)
    /// Ends it; the providers serve again.
    func stop()
}

/// The running simulation and the connection that started it.
struct RunningSimulation {
    let run: any Simulation
    let owner: String
}

extension GeoClueService {
    /// `io.github.whereabouts1.Manager.Simulate(s track, a{sv} options)`: plays a recorded track (NMEA or GPX text)
    /// in the place of every provider, its fixes marked simulated, until it ends, `StopSimulation` is called or the
    /// caller disconnects. Options: `speed` (d, times real time, default 1), `loop` (b, default false), `name` (s,
    /// the file name for messages). Needs the management action; a running simulation is replaced.
    ///
    /// The track is parsed after the caller is authorised, not before as other arguments are checked: parsing up to
    /// 8 MiB is the one check that costs, and a caller who may not simulate must not make the bus thread pay it.
    func simulate(_ request: SimulationRequest, _ call: MethodCall) throws(DBusError) -> Reply {
        guard let simulator else {
            throw DBusError(name: DBusError.Name.notSupported, message: "this service has no simulator")
        }
        let (track, name, speed, loops) = (request.track, request.name, request.speed, request.loops)
        BusActor.task { [self] in
            let prepared: any Simulation
            do throws(DBusError) {
                try await requireManagement(call)
                // A caller gone while it was authorised (a prompt can take minutes) would leave a simulation
                // nobody can end by leaving.
                _ = try await uid(of: call.sender)
                do throws(SimulationError) {
                    prepared = try simulator.prepare(track: track, name: name, speed: speed, loops: loops)
                } catch {
                    throw .invalidArgs(error.message)
                }
            } catch {
                call.fail(error)
                return
            }
            endSimulation(reason: "replaced")
            simulation = RunningSimulation(run: prepared, owner: call.sender)
            prepared.start { [weak self, weak prepared] in
                guard let self, let prepared, self.simulation?.run === prepared else { return }
                self.endSimulation(reason: "finished")
            }
            logger.notice("simulation: \(call.sender) plays \(name) at \(speed)× speed\(loops ? ", looping" : "")")
            emitSimulating()
            call.reply()
        }
        return .later
    }

    /// `io.github.whereabouts1.Manager.StopSimulation()`: ends the running simulation; its owner may, anyone else
    /// needs the management action. No simulation: nothing happens.
    func stopSimulation(_ call: MethodCall) -> Reply {
        guard let simulation else { return .values([]) }
        guard simulation.owner != call.sender else {
            endSimulation(reason: "stopped")
            return .values([])
        }
        managing(call) { self.endSimulation(reason: "stopped") }
        return .later
    }

    /// Ends the running simulation, telling its owner why with `SimulationEnded(reason)`.
    func endSimulation(reason: String) {
        guard let ended = simulation else { return }
        simulation = nil
        ended.run.stop()
        logger.notice("simulation: ended (\(reason))")
        connection.emitSignal(
            path: GeoClue.managerPath, interface: Whereabouts.managerInterface, member: "SimulationEnded",
            arguments: [.string(reason)], destination: ended.owner)
        emitSimulating()
    }

    private func emitSimulating() {
        connection.emitPropertiesChanged(
            path: GeoClue.managerPath, interface: Whereabouts.managerInterface,
            changed: ["Simulating": .boolean(simulation != nil)])
    }
}
