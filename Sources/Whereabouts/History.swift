import DBus
import Loop
import WhereaboutsCore

/// One app's use of location, a row of `io.github.whereabouts1.Manager.GetHistory`'s uses: from its client's start
/// (or single request) to its stop.
public struct LocationUse: Sendable, Equatable {
    /// The user whose app it was.
    public var uid: UInt32
    /// The app as the service knew it: `flatpak:ID`, `snap:ID`, `portal:ID` or `claimed:ID` (``AppIdentity``).
    public var app: String
    /// When it began, Unix milliseconds.
    public var started: Int64
    /// When it ended, Unix milliseconds; nil while it goes on.
    public var stopped: Int64?
    /// The finest level it was served at.
    public var accuracy: Accuracy?
    /// True when the app's fixes were coarsened all along.
    public var approximate: Bool
    /// The kinds of the providers whose fixes it was given (`gpsd`, `wifi`, …).
    public var providers: [String]
}

/// One request that left the machine for a positioning service, a row of
/// `io.github.whereabouts1.Manager.GetHistory`'s lookups. It never holds what identifies an access point or a cell,
/// nor a position.
public struct LocationLookup: Sendable, Equatable {
    /// The user in whose record it is: one of whose apps needed it.
    public var uid: UInt32
    /// When it ended, Unix milliseconds.
    public var time: Int64
    /// `wifi`, `cell`, `ip` or `submission` (a contribution).
    public var kind: String
    /// The service's host name.
    public var host: String
    /// How many access points it carried.
    public var accessPoints: UInt32
    /// How many mobile network cells it carried; with no access point either, only the machine's IP address.
    public var cells: UInt32
    /// `position`, `not-found`, `accepted` or `failed`.
    public var outcome: String
    /// The answer's accuracy in metres, for a position.
    public var accuracy: Double?
    /// The apps of that user whose use needed it.
    public var apps: [String]
}

/// A record of location use, as `io.github.whereabouts1.Manager.GetHistory` answers it.
public struct LocationHistory: Sendable, Equatable {
    /// The apps' uses, oldest first by their end; those going on last.
    public var uses: [LocationUse]
    /// The requests that left the machine, oldest first.
    public var lookups: [LocationLookup]
}

extension LocationManager {
    /// The record of location use of this user, or of every user (which needs the management authorisation), kept
    /// for 7 days: what ended at or after `since` (Unix milliseconds; 0 for everything)
    /// (`io.github.whereabouts1.Manager.GetHistory`).
    public func history(since: Int64 = 0, allUsers: Bool = false) async throws(LocationError) -> LocationHistory {
        guard try await isWhereabouts() else { throw .unsupported("history") }
        let reply = try await callManager("GetHistory", [.boolean(allUsers), .uint64(UInt64(max(0, since)))])
        guard reply.count == 2 else { throw .other(name: "", message: "GetHistory returned \(reply.count) values") }
        let uses = (reply[0].elements ?? []).compactMap { row -> LocationUse? in
            guard let fields = row.fields, fields.count == 7, let uid = fields[0].uint32, let app = fields[1].string,
                let started = fields[2].uint64, let stopped = fields[3].uint64, let level = fields[4].uint32,
                let approximate = fields[5].bool, let providers = fields[6].elements?.compactMap(\.string)
            else { return nil }
            return LocationUse(
                uid: uid, app: app, started: Int64(clamping: started),
                stopped: stopped == 0 ? nil : Int64(clamping: stopped),
                accuracy: Accuracy(rawValue: level), approximate: approximate, providers: providers)
        }
        let lookups = (reply[1].elements ?? []).compactMap { row -> LocationLookup? in
            guard let fields = row.fields, fields.count == 9, let uid = fields[0].uint32, let time = fields[1].uint64,
                let kind = fields[2].string, let host = fields[3].string, let accessPoints = fields[4].uint32,
                let cells = fields[5].uint32, let outcome = fields[6].string, let accuracy = fields[7].double,
                let apps = fields[8].elements?.compactMap(\.string)
            else { return nil }
            return LocationLookup(
                uid: uid, time: Int64(clamping: time), kind: kind, host: host, accessPoints: accessPoints,
                cells: cells, outcome: outcome, accuracy: accuracy.isNaN ? nil : accuracy, apps: apps)
        }
        return LocationHistory(uses: uses, lookups: lookups)
    }

    /// Forgets the record of location use of user `uid`; another user's needs the management authorisation
    /// (`io.github.whereabouts1.Manager.ClearHistory`).
    public func clearHistory(uid: UInt32) async throws(LocationError) {
        guard try await isWhereabouts() else { throw .unsupported("history") }
        _ = try await callManager("ClearHistory", [.uint32(uid)])
    }
}
