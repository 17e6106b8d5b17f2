import DBus
import Loop
import WhereaboutsCore

/// What the clients that need fixes add up to, and its announcement: `InUse` (to everyone, as GeoClue does: it
/// names no app), each reader's view of `io.github.whereabouts1.Manager.ActiveApps` (to that reader alone), and the
/// level the providers must serve (``onDemandChanged``).
@BusActor
final class ServiceActivity {
    private let connection: Connection
    /// What each client needing fixes adds, by client id.
    private var contributions: [UInt32: ActivityContribution] = [:]
    private var tally = ActivityTally()
    /// `org.freedesktop.GeoClue2.Manager.InUse`, as last announced.
    private(set) var inUse = false
    /// The level the providers were last asked for; nil: none.
    private(set) var demand: AccuracyLevel?
    /// The connections that read `ActiveApps`, whose view they were given and the value they last got.
    private var readers: [String: (viewer: ActiveAppsViewer, apps: [String])] = [:]
    /// Nesting of ``inOneUpdate(_:)``, and whether the activity changed inside it.
    private var updateDepth = 0
    private var changedMeanwhile = false
    /// Called with the highest level any client needing fixes is served at, or the watched regions need (nil when
    /// nothing needs any).
    var onDemandChanged: (@BusActor (AccuracyLevel?) -> Void)?
    /// The smallest `TimeThreshold` of the clients served at exact level, as last announced.
    private(set) var exactTimeThreshold: UInt32?
    /// Called with the smallest `TimeThreshold` of the clients served at exact level when it changes (nil: none is).
    var onExactTimeThresholdChanged: (@BusActor (UInt32?) -> Void)?
    /// The level the watched regions need to be decided (``RegionWatch``), nil when none is watched.
    var regionDemand: AccuracyLevel? {
        didSet { if regionDemand != oldValue { changed() } }
    }

    init(connection: Connection) { self.connection = connection }

    /// Sets what client `id` adds to the activity (nil: nothing, it needs no fixes); a few dictionary updates,
    /// whatever the number of clients.
    func set(_ contribution: ActivityContribution?, of id: UInt32) {
        let old = contributions[id]
        guard old != contribution else { return }
        contributions[id] = contribution
        if contribution == nil { contributions.releaseUnusedCapacity() }
        tally.replace(old, with: contribution)
        changed()
    }

    /// Runs `body`, which may change many clients at once (a switch, a peer leaving), announcing the activity
    /// once at its end rather than once a client.
    func inOneUpdate(_ body: () -> Void) {
        updateDepth += 1
        body()
        updateDepth -= 1
        if updateDepth == 0 && changedMeanwhile {
            changedMeanwhile = false
            publish()
        }
    }

    /// The apps `viewer` may see among those using location now.
    func apps(seenBy viewer: ActiveAppsViewer) -> [String] {
        switch viewer {
        case .everyone: tally.allApps
        case .user(let uid): tally.apps(of: uid)
        }
    }

    /// From now on the connection `reader`, which was given `apps` as `viewer` sees them, is sent their changes.
    func follow(_ reader: String, as viewer: ActiveAppsViewer, given apps: [String]) {
        readers[reader] = (viewer, apps)
    }

    /// The connection `reader` left.
    func forget(_ reader: String) {
        readers[reader] = nil
        readers.releaseUnusedCapacity()
    }

    private func changed() {
        guard updateDepth == 0 else {
            changedMeanwhile = true
            return
        }
        publish()
    }

    /// Announces `InUse`, each reader's view of `ActiveApps` and the providers' demand, where they changed.
    private func publish() {
        if tally.inUse != inUse {
            inUse = tally.inUse
            connection.emitPropertiesChanged(
                path: GeoClue.managerPath, interface: GeoClue.managerInterface, changed: ["InUse": .boolean(inUse)])
        }
        var views: [ActiveAppsViewer: [String]] = [:]
        for (reader, entry) in readers {
            let apps = views[entry.viewer] ?? apps(seenBy: entry.viewer)
            views[entry.viewer] = apps
            guard apps != entry.apps else { continue }
            readers[reader] = (entry.viewer, apps)
            connection.emitPropertiesChanged(
                path: GeoClue.managerPath, interface: Whereabouts.managerInterface,
                changed: ["ActiveApps": .strings(apps)], destination: reader)
        }
        let level = [tally.demand, regionDemand].compactMap { $0 }.max()
        if level != demand {
            demand = level
            onDemandChanged?(level)
        }
        if tally.smallestExactTimeThreshold != exactTimeThreshold {
            exactTimeThreshold = tally.smallestExactTimeThreshold
            onExactTimeThresholdChanged?(exactTimeThreshold)
        }
    }
}

/// Whose apps a reader of `ActiveApps` sees.
enum ActiveAppsViewer: Hashable {
    case user(UInt32)
    case everyone
}
