import Testing
import WhereaboutsCore

@Suite("The activity kept client by client")
struct ActivityTallyTests {
    func client(_ level: AccuracyLevel, user: UInt32?, app: String?, started: Bool = true) -> ActivityContribution {
        ActivityContribution(level: level, user: user, app: app, started: started)
    }

    @Test func demandIsTheHighestLevelNeededAndFallsWhenItsClientGoes() {
        var tally = ActivityTally()
        #expect(tally.demand == nil && !tally.inUse && tally.allApps.isEmpty)
        let exact = client(.exact, user: 1000, app: "maps")
        let city = client(.city, user: 1001, app: "weather")
        tally.replace(nil, with: exact)
        tally.replace(nil, with: city)
        #expect(tally.demand == .exact)
        tally.replace(exact, with: nil)
        #expect(tally.demand == .city)
        tally.replace(city, with: nil)
        #expect(tally.demand == nil)
    }

    @Test func appsAreListedPerUserAndInAll() {
        var tally = ActivityTally()
        tally.replace(nil, with: client(.city, user: 1000, app: "maps"))
        tally.replace(nil, with: client(.city, user: 1000, app: "maps"))
        tally.replace(nil, with: client(.city, user: 1000, app: "clock"))
        tally.replace(nil, with: client(.city, user: 1001, app: "weather"))
        #expect(tally.apps(of: 1000) == ["clock", "maps"])
        #expect(tally.apps(of: 1001) == ["weather"])
        #expect(tally.apps(of: 1002) == [])
        #expect(tally.allApps == ["clock", "maps", "weather"])
        tally.replace(client(.city, user: 1000, app: "maps"), with: nil)
        #expect(tally.apps(of: 1000) == ["clock", "maps"], "one client of the app is left")
        tally.replace(client(.city, user: 1000, app: "maps"), with: nil)
        #expect(tally.apps(of: 1000) == ["clock"])
    }

    @Test func systemAppsAndWaitingClientsDoNotMakeItInUse() {
        var tally = ActivityTally()
        let system = client(.exact, user: 0, app: nil)
        let waiting = client(.city, user: 1000, app: "maps", started: false)
        tally.replace(nil, with: system)
        tally.replace(nil, with: waiting)
        #expect(!tally.inUse)
        #expect(tally.allApps == ["maps"], "a client waiting for a single fix is receiving location")
        #expect(tally.demand == .exact, "a system app still needs the providers")
        let started = client(.city, user: 1000, app: "maps", started: true)
        tally.replace(waiting, with: started)
        #expect(tally.inUse)
        tally.replace(started, with: started)
        tally.replace(started, with: nil)
        #expect(!tally.inUse && tally.allApps.isEmpty)
    }

    @Test func theSmallestTimeThresholdIsTheExactClientsOnly() {
        var tally = ActivityTally()
        let slow = ActivityContribution(level: .exact, user: 1000, app: "maps", started: true, timeThreshold: 20)
        let fast = ActivityContribution(level: .exact, user: 1000, app: "run", started: true, timeThreshold: 5)
        let coarse = ActivityContribution(level: .city, user: 1000, app: "weather", started: true, timeThreshold: 1)
        #expect(tally.smallestExactTimeThreshold == nil)
        tally.replace(nil, with: coarse)
        #expect(tally.smallestExactTimeThreshold == nil, "a city client never paces a receiver")
        tally.replace(nil, with: slow)
        tally.replace(nil, with: fast)
        #expect(tally.smallestExactTimeThreshold == 5)
        tally.replace(fast, with: nil)
        #expect(tally.smallestExactTimeThreshold == 20)
        tally.replace(slow, with: nil)
        #expect(tally.smallestExactTimeThreshold == nil)
    }
}
