import WhereaboutsCore

/// Gathers a receiver's GSV and GSA sentences into the satellites it sees (`io.github.whereabouts1.Client.Satellites`).
///
/// **Sequences.** Each talker lists its satellites in a GSV sequence of up to nine parts (and, from NMEA 4.10, one
/// sequence per signal). A sequence counts only once whole: its parts in order, from the first to the last; a part
/// out of order, one of another length or count, or one listing more satellites than the sequence has, drops the
/// sequence begun. A whole sequence replaces what that talker
/// (and signal) listed before, and the sky is given again: every talker's latest sequence together, a satellite
/// listed for several signals once, with its strongest C/N0. A sequence of no satellites (`$GLGSV,1,1,00`) empties
/// its talker's part of the sky.
///
/// **Used in the fix.** Each GSA names the satellites of its system that the fix uses, replacing what the GSAs named
/// before for that system: a `GN` GSA's system by its system id (NMEA 4.11), else each satellite's by its number
/// (``NMEASatelliteNumbering``). A sky given before the epoch's GSA arrived marks them as the previous GSA said.
public struct NMEASkyAssembler: Sendable {
    /// The most talker and signal pairs followed: enough for every system on four signals.
    static let maximumSequences = 32

    private struct SequenceKey: Hashable {
        var talker: String
        var signalID: Int?
    }

    private struct Partial {
        var length: Int
        var inView: Int
        var received: Int
        var listed = 0
        var satellites: [Satellite]
    }

    private var partial: [SequenceKey: Partial] = [:]
    private var lists: [SequenceKey: [Satellite]] = [:]
    private var used: [Constellation: Set<UInt32>] = [:]

    /// An assembler that has seen nothing.
    public init() {}

    /// Adds one decoded sentence; returns the whole sky when it completed a GSV sequence.
    public mutating func add(_ sentence: NMEASentence) -> [Satellite]? {
        switch sentence.content {
        case .gsa(let gsa):
            take(gsa, talker: sentence.talker)
            return nil
        case .gsv(let gsv):
            return take(gsv, talker: sentence.talker)
        default:
            return nil
        }
    }

    private mutating func take(_ gsa: NMEASentence.GSA, talker: String) {
        var named: [Constellation: Set<UInt32>] = [:]
        for number in gsa.satellitesUsed {
            guard
                let (constellation, id) = NMEASatelliteNumbering.satellite(
                    number: number, talker: talker, systemID: gsa.systemID)
            else { continue }
            named[constellation, default: []].insert(id)
        }
        if let system = gsa.systemID.flatMap({ NMEASatelliteNumbering.constellation(systemID: $0) }), named.isEmpty {
            named[system] = []
        }
        used.merge(named) { $1 }
    }

    private mutating func take(_ gsv: NMEASentence.GSV, talker: String) -> [Satellite]? {
        let key = SequenceKey(talker: talker, signalID: gsv.signalID)
        guard lists[key] != nil || partial[key] != nil || lists.count + partial.count < Self.maximumSequences else {
            return nil
        }
        var sequence: Partial
        if gsv.partNumber == 1 {
            sequence = Partial(length: gsv.partCount, inView: gsv.satellitesInView, received: 0, satellites: [])
        } else if let begun = partial[key], begun.length == gsv.partCount, begun.inView == gsv.satellitesInView,
            begun.received + 1 == gsv.partNumber
        {
            sequence = begun
        } else {
            partial[key] = nil
            return nil
        }
        sequence.received = gsv.partNumber
        sequence.listed += gsv.satellites.count
        guard sequence.listed <= sequence.inView else {
            partial[key] = nil
            return nil
        }
        for entry in gsv.satellites {
            guard let (constellation, id) = NMEASatelliteNumbering.satellite(number: entry.number, talker: talker)
            else { continue }
            sequence.satellites.append(
                Satellite(
                    constellation: constellation, id: id, elevation: entry.elevation, azimuth: entry.azimuth,
                    signalStrength: entry.signalStrength, usedInFix: false))
        }
        guard sequence.received == sequence.length else {
            partial[key] = sequence
            return nil
        }
        partial[key] = nil
        lists[key] = sequence.satellites
        return sky
    }

    /// Every talker's latest list, each satellite once with its strongest signal, marked by the latest GSAs.
    private var sky: [Satellite] {
        var strongest: [SatelliteKey: Satellite] = [:]
        for satellite in lists.values.joined() {
            let key = SatelliteKey(constellation: satellite.constellation, id: satellite.id)
            if let kept = strongest[key], (kept.signalStrength ?? -1) >= (satellite.signalStrength ?? -1) { continue }
            strongest[key] = satellite
        }
        return strongest.values.map { satellite in
            var marked = satellite
            marked.usedInFix = used[satellite.constellation]?.contains(satellite.id) ?? false
            return marked
        }.sorted(by: Satellite.listOrder)
    }

    private struct SatelliteKey: Hashable {
        var constellation: Constellation
        var id: UInt32
    }
}
