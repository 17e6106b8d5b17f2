import Loop
import WhereaboutsCore

/// What assists a modem's satellite receiver before it is set up: the predicted orbits (XTRA) to inject, and the
/// SUPL server to set. The daemon's is a ``PredictedOrbitSource``; the modems' service asks it only when an exact
/// client needs a receiver.
@BusActor
public protocol GNSSAssistance: AnyObject {
    /// `[modem-gps] supl-server=`: set on each modem before its receiver is first set up; nil sets none.
    var suplServer: String? { get }
    /// The predicted-orbit file for a modem whose `AssistanceDataServers` are `modemServers`: the one kept while
    /// valid, else one downloaded now if the rules allow it; nil when there is none to give (the receiver then
    /// starts unassisted). Returns within the download's time limit.
    func predictedOrbits(modemServers: [String]) async -> PredictedOrbitFile?
}
