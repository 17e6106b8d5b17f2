import Loop
import Synchronization
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// A web service that holds each request until the test answers it, keeping the requests it was sent.
private final class HeldService: HTTPTransport {
    private struct State {
        var requests: [HTTPRequest] = []
        var held: [CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>] = []
    }

    private let state = Mutex(State())

    /// How many requests were sent in all.
    var requests: Int { state.withLock { $0.requests.count } }

    /// How many requests wait for their answer.
    var held: Int { state.withLock { $0.held.count } }

    /// The bodies of the requests sent, as text, oldest first.
    var bodies: [String] { state.withLock { $0.requests.map { String(decoding: $0.body, as: UTF8.self) } } }

    /// Answers the oldest request still held with `answer`; false when none is held.
    @discardableResult
    func answer(_ answer: Result<HTTPResponse, HTTPFailure>) -> Bool {
        let continuation = state.withLock { $0.held.isEmpty ? nil : $0.held.removeFirst() }
        continuation?.resume(returning: answer)
        return continuation != nil
    }

    func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure> {
        await withCheckedContinuation { continuation in
            state.withLock { state in
                state.requests.append(request)
                state.held.append(continuation)
            }
        }
    }
}

/// A scanner the test drives: it records how it was started and stopped, and scans only when the test says so.
@BusActor
private final class DrivenScanner: AccessPointScanner {
    let backend = "test"
    let isAvailable = true
    var onScan: (@BusActor ([AccessPoint]) -> Void)?
    var onAvailabilityChanged: (@BusActor () -> Void)?
    /// The interval of each ``start(interval:)``, in order.
    private(set) var intervals: [Duration] = []
    /// How many times ``stop()`` was called.
    private(set) var stops = 0

    func start(interval: Duration) { intervals.append(interval) }

    func stop() { stops += 1 }

    /// Reports a completed scan that saw `accessPoints`.
    func scan(_ accessPoints: [AccessPoint]) { onScan?(accessPoints) }
}

/// What the provider offered and saved, as it happened.
@BusActor
private final class ProviderLog {
    /// The fixes offered, oldest first.
    var fixes: [Fix] = []
    /// How many times the provider said its availability changed.
    var availabilityChanges = 0
    /// The cache as last saved; it is also what the provider loads at its first start.
    var cache = PositionCache()
    /// How many times the cache was saved.
    var saves = 0
}

/// A place: four access points with globally administered addresses `00:11:22:33:<place>:01` to `…:04`, named
/// networks, heard at −50 to −65 dBm. Two places with different numbers share no access point.
private func place(_ number: UInt8) -> [AccessPoint] {
    (1...4).map { index in
        AccessPoint(
            bssid: BSSID(octets: [0x00, 0x11, 0x22, 0x33, number, UInt8(index)])!, ssid: Array("net\(index)".utf8),
            signal: -45 - 5 * index)
    }
}

/// The service's answer placing the access points at `latitude`, `longitude`, within 30 m.
private func answer(latitude: Double, longitude: Double) -> Result<HTTPResponse, HTTPFailure> {
    let body = #"{"location": {"lat": \#(latitude), "lng": \#(longitude)}, "accuracy": 30}"#
    return .success(HTTPResponse(status: 200, body: Array(body.utf8)))
}

/// The service's answer for the place most tests use.
private let berlin = answer(latitude: 52.5, longitude: 13.4)

/// The Wi-Fi provider's decisions on a manual clock, with a scanner and a service the test drives: an answer for
/// a place already left is kept but not shown, an aged cache entry is asked again, a failure's backoff spaces
/// the tries, joining a network ends it, and a single-shot refresh re-offers only a recent position.
@Suite @BusActor struct WiFiProviderTimingTests {
    private let clock = ManualClock()
    private let service = HeldService()
    private let scanner = DrivenScanner()
    private let log = ProviderLog()
    private let routes = ScriptedRouteSource()
    /// The cell provider's side of the combined queries, for the tests that join it.
    private let cellSide = ScriptedCarriedCells()
    private let network: NetworkChanges

    init() {
        network = NetworkChanges(source: routes, timers: clock, logger: SilentLogger())
    }

    /// A started provider reading and saving its cache in ``log``, with no submissions.
    private func startedProvider() -> WiFiProvider {
        let log = self.log
        let provider = WiFiProvider(
            scanner: scanner, transport: service, url: "https://location.example/v1/geolocate",
            loadCache: { log.cache },
            saveCache: {
                log.cache = $0
                log.saves += 1
            },
            submitter: nil, network: network, clock: clock, timers: clock, logger: SilentLogger())
        provider.onFix = { log.fixes.append($0) }
        provider.onAvailabilityChanged = { log.availabilityChanges += 1 }
        provider.start()
        return provider
    }

    /// Lets the provider's lookup tasks run until `condition` holds; fails the test when it still does not after
    /// many turns.
    private func settle(
        until condition: @BusActor () -> Bool, _ what: Comment, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var turns = 0
        while !condition(), turns < 10_000 {
            await Task.yield()
            turns += 1
        }
        try #require(condition(), what, sourceLocation: sourceLocation)
    }

    /// Lets the provider's lookup tasks run, then checks that the service has had `count` requests in all.
    private func settle(requests count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for _ in 0..<1000 { await Task.yield() }
        try #require(service.requests == count, sourceLocation: sourceLocation)
    }

    /// With serving cells given, a lookup carries them with the access points; an answer as coarse as a cell's
    /// placed the cells, not the access points, so it is neither delivered nor cached, and a finer one is the
    /// Wi-Fi fix.
    @Test func aLookupWithCellsTakesOnlyAnAnswerFinerThanACell() async throws {
        let provider = startedProvider()
        let cell = try ServingCell(
            radio: .lte, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: 0x5A1F, cellID: 0x8A1_B2C3)
        cellSide.toCarry = { [cell] }
        CombinedCellQueries.join(lookup: provider, cells: cellSide)
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first place is looked up")
        #expect(service.bodies.first?.contains(#""cellTowers":[{"cellId":144814787"#) == true, "\(service.bodies)")
        #expect(service.bodies.first?.contains("00:11:22:33:01:01") == true)
        let coarse = #"{"location": {"lat": 52.5, "lng": 13.4}, "accuracy": 1000}"#
        try #require(service.answer(.success(HTTPResponse(status: 200, body: Array(coarse.utf8)))))
        try await settle(requests: 1)
        #expect(log.fixes.isEmpty && log.cache.count(of: .network) == 0)
        scanner.scan(place(2))
        try await settle(until: { service.held == 1 }, "the second place is looked up")
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the finer answer is delivered")
        #expect(log.fixes.first?.horizontalAccuracy == 30 && log.fixes.first?.description == "WiFi")
        provider.stop()
    }

    /// ``WiFiProvider/carryCells(_:)``: before the first scan it promises the cells to that scan's lookup, and
    /// declines when the scan needs none; after it, it sends them at once with an unknown recent scan, says yes
    /// while a lookup carrying them is out and no for other cells, and hands every answer to the cell provider.
    @Test func theCellProvidersCellsGoWithTheLatestScan() async throws {
        let provider = startedProvider()
        let cell = try ServingCell(
            radio: .lte, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: 0x5A1F, cellID: 0x8A1_B2C3)
        let other = try ServingCell(
            radio: .gsm, mobileCountryCode: 262, mobileNetworkCode: 1, areaCode: 0x1A2B, cellID: 0x3C4D)
        var declined = 0
        var answered: [[ServingCell]] = []
        cellSide.toCarry = { [cell] }
        cellSide.onDeclined = { declined += 1 }
        cellSide.onAnswered = { _, cells in answered.append(cells) }
        CombinedCellQueries.join(lookup: provider, cells: cellSide)
        #expect(provider.carryCells([cell]), "the first scan's lookup will carry them")
        scanner.scan(Array(place(1).prefix(1)))
        try await settle(requests: 0)
        #expect(declined == 1, "one access point is no query: the promise is declined")
        provider.stop()
        provider.start()
        #expect(provider.carryCells([cell]))
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first scan is looked up with the cell")
        #expect(declined == 1 && service.bodies.last?.contains(#""cellTowers""#) == true)
        #expect(provider.carryCells([cell]) && !provider.carryCells([other]))
        try #require(service.answer(berlin))
        try await settle(until: { answered.count == 1 }, "the answer is handed over")
        #expect(provider.carryCells([other]) == false, "a located scan leaves the cells to go alone")
        scanner.scan(place(2))
        try await settle(until: { service.held == 1 }, "the second place is looked up")
        try #require(service.answer(.success(HTTPResponse(status: 404, body: []))))
        try await settle(until: { answered.count == 2 }, "the service knows neither")
        #expect(provider.carryCells([other]), "an unknown recent scan carries new cells at once")
        try await settle(until: { service.held == 1 }, "the scan is asked again with the other cell")
        #expect(service.bodies.last?.contains(#""cellId":15437"#) == true, "\(service.bodies)")
        try #require(service.answer(.failure(.unreachable("down"))))
        try await settle(until: { answered.count == 3 }, "a failure is handed over too")
        #expect(answered.last == [other])
        #expect(provider.carryCells([cell]) == false, "the backoff holds it")
        provider.stop()
    }

    /// A query with cells that the service refuses (Mozilla's Ichnaea refuses a whole query naming an `nr` cell)
    /// is asked again at once without them, and the refusal neither backs Wi-Fi off nor is its fix.
    @Test func aRefusedQueryWithCellsIsAskedAgainWithout() async throws {
        let provider = startedProvider()
        let cell = try ServingCell(
            radio: .nr, mobileCountryCode: 234, mobileNetworkCode: 15, areaCode: 0x1F_0A3C, cellID: 0x1234_5678)
        var refusals = 0
        cellSide.toCarry = { refusals == 0 ? [cell] : [] }
        cellSide.onAnswered = { result, _ in
            if case .success(let response) = result, response.status == 400 { refusals += 1 }
        }
        CombinedCellQueries.join(lookup: provider, cells: cellSide)
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the scan is looked up with the cell")
        #expect(service.bodies.last?.contains(#""radioType":"nr""#) == true, "\(service.bodies)")
        let parseError = #"{"error": {"errors": [{"reason": "parseError"}], "code": 400, "message": "Parse Error"}}"#
        try #require(service.answer(.success(HTTPResponse(status: 400, body: Array(parseError.utf8)))))
        try await settle(until: { service.requests == 2 && service.held == 1 }, "asked again without the cell")
        #expect(service.bodies.last?.contains("cellTowers") == false && refusals == 1, "\(service.bodies)")
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the access points' answer is the fix")
        #expect(provider.availableLevel == .street)
        provider.stop()
    }

    /// A scan of another place arrives while the first place's lookup is out: that answer is kept in the cache,
    /// which then locates the first place with no request, but it is not offered as a fix.
    @Test func anAnswerForAPlaceLeftMeanwhileIsCachedButNotDelivered() async throws {
        let provider = startedProvider()
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the lookup for the first place is sent")
        #expect(service.bodies.first?.contains("00:11:22:33:01:01") == true)
        scanner.scan(place(2))
        try await settle(requests: 1)
        try #require(service.answer(berlin))
        try await settle(until: { log.saves == 1 }, "the answer is saved")
        #expect(log.fixes.isEmpty)
        #expect(log.cache.count(of: .network) == 1)
        scanner.scan(place(1))
        try await settle(requests: 1)
        #expect(log.fixes.count == 1)
        #expect(log.fixes.first?.latitude == 52.5 && log.fixes.first?.longitude == 13.4)
        #expect(log.fixes.first?.description == "WiFi (cached)")
        // The place left behind was never looked up; the stale answer does not hold it back.
        scanner.scan(place(2))
        try await settle(until: { service.held == 1 }, "the second place is looked up")
        #expect(service.requests == 2 && service.bodies.last?.contains("00:11:22:33:02:01") == true)
        try #require(service.answer(answer(latitude: 48.1, longitude: 11.6)))
        try await settle(until: { log.fixes.count == 2 }, "the second place's answer is delivered")
        #expect(log.fixes[1].latitude == 48.1 && log.fixes[1].longitude == 11.6 && log.fixes[1].description == "WiFi")
        provider.stop()
    }

    /// A scan that would be looked up but for a train's networks sends nothing and makes Wi-Fi unavailable with the
    /// reason `moving-network`, the count in its details; a scan with the station's own networks beside them is
    /// looked up with those alone, and Wi-Fi is available again.
    @Test func aTrainsNetworksAreNeitherSentNorAFix() async throws {
        let provider = startedProvider()
        let train = (1...3).map { index in
            AccessPoint(
                bssid: BSSID(octets: [0x00, 0x22, 0x33, 0x44, 0x55, UInt8(index)])!, ssid: Array("WIFIonICE".utf8),
                signal: -40)
        }
        scanner.scan(train + [place(1)[0]])
        try await settle(requests: 0)
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "moving-network")
        #expect(provider.details["moving-networks-left-out"] == .count(3))
        #expect(log.availabilityChanges == 1)
        scanner.scan(train + place(1))
        try await settle(until: { service.held == 1 }, "the station's networks are looked up")
        #expect(provider.availableLevel == .street && provider.unavailabilityReason == nil)
        #expect(log.availabilityChanges == 2)
        #expect(service.bodies.first?.contains("00:11:22:33:01:01") == true)
        #expect(service.bodies.first?.contains("00:22:33:44:55") == false)
        try #require(service.answer(berlin))
        try await settle(until: { log.saves == 1 }, "the answer is saved")
        #expect(log.cache.lookup(train + [place(1)[0]], now: clock.wallNow) == nil, "the train's networks are unknown")
        provider.stop()
    }

    /// A place located from the cache is asked of the service again once the entry is older than
    /// ``PositionCache/networkMaximumAge``: the throttle, whose reference is the cache's answer, does not hold it
    /// back.
    @Test func aCacheEntryPastItsAgeIsLookedUpAgain() async throws {
        let provider = startedProvider()
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first lookup is sent")
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the answer is delivered")
        #expect(log.fixes[0].description == "WiFi")
        // Past the refresh interval, so that the cache's unchanged position is offered again and can be seen.
        clock.advance(by: WiFiProvider.refreshInterval + .seconds(1))
        scanner.scan(place(1))
        try await settle(requests: 1)
        try #require(log.fixes.count == 2)
        #expect(log.fixes[1].description == "WiFi (cached)")
        // The entry was stored before the refresh interval passed: it is now past its age, by that much.
        clock.advance(by: PositionCache.networkMaximumAge)
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the place is asked again once its entry has aged out")
        #expect(service.requests == 2)
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 3 }, "the new answer is delivered")
        #expect(log.fixes[2].description == "WiFi")
        provider.stop()
    }

    /// After an unreachable service the provider is unavailable, scans within ``LookupBackoff/firstDelay`` send
    /// nothing, and the first scan after it asks again; the answer makes the provider available again.
    @Test func aFailureHoldsLookupsBackUntilItsBackoffEnds() async throws {
        let provider = startedProvider()
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first lookup is sent")
        #expect(provider.availableLevel == .street)
        try #require(service.answer(.failure(.unreachable("down"))))
        try await settle(until: { log.availabilityChanges == 1 }, "the failure is reported")
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "service-unreachable")
        clock.advance(by: LookupBackoff.firstDelay / 2)
        scanner.scan(place(1))
        try await settle(requests: 1)
        clock.advance(by: LookupBackoff.firstDelay / 2 - .milliseconds(1))
        scanner.scan(place(1))
        try await settle(requests: 1)
        clock.advance(by: .milliseconds(1))
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the place is asked again once the backoff has ended")
        #expect(service.requests == 2)
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the answer is delivered")
        #expect(provider.availableLevel == .street && provider.unavailabilityReason == nil)
        #expect(log.availabilityChanges == 2)
        provider.stop()
    }

    /// ``WiFiProvider/refresh()`` offers the position again, newly stamped, while the last scan is at most two
    /// street-level scan intervals old, not once it is older, and not after a stop.
    @Test func aRefreshReOffersThePositionOnlyWhileTheLastScanIsRecent() async throws {
        let provider = startedProvider()
        provider.demandChanged(.street)
        #expect(scanner.intervals == [WiFiProvider.coarseScanInterval, WiFiProvider.streetScanInterval])
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first lookup is sent")
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the answer is delivered")
        clock.advance(by: WiFiProvider.streetScanInterval * 2)
        provider.refresh()
        try #require(log.fixes.count == 2)
        #expect(log.fixes[1].latitude == 52.5 && log.fixes[1].longitude == 13.4)
        #expect(log.fixes[1].timestamp == clock.wallNow && log.fixes[1].timestamp > log.fixes[0].timestamp)
        clock.advance(by: .milliseconds(1))
        provider.refresh()
        #expect(log.fixes.count == 2)
        // A new scan of the same place, located from the cache, makes the position recent again.
        scanner.scan(place(1))
        try await settle(requests: 1)
        #expect(log.fixes.count == 2)
        provider.refresh()
        #expect(log.fixes.count == 3)
        provider.stop()
        #expect(scanner.stops == 1)
        provider.refresh()
        #expect(log.fixes.count == 3)
    }

    /// After a failure, joining a network asks about the current scan at once, within the backoff and with no
    /// new scan; the answer makes the provider available again.
    @Test func joiningANetworkAsksAboutTheUnlocatedScanAtOnce() async throws {
        let provider = startedProvider()
        routes.dump([Routes.home])
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first lookup is sent")
        try #require(service.answer(.failure(.unreachable("down"))))
        try await settle(until: { provider.availableLevel == .none }, "the failure is reported")
        routes.moveFromHomeToWork(on: clock)
        #expect(clock.monotonicNow < MonotonicTime(nanoseconds: 0) + LookupBackoff.firstDelay)
        try await settle(until: { service.held == 1 }, "the scan is asked about again on the new network")
        #expect(service.requests == 2)
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the answer is delivered")
        #expect(provider.availableLevel == .street)
        provider.stop()
    }

    /// A scan already located asks nothing when the network changes: the access points, not the network, say
    /// where the machine is.
    @Test func joiningANetworkAsksNothingAboutALocatedScan() async throws {
        let provider = startedProvider()
        routes.dump([Routes.home])
        scanner.scan(place(1))
        try await settle(until: { service.held == 1 }, "the first lookup is sent")
        try #require(service.answer(berlin))
        try await settle(until: { log.fixes.count == 1 }, "the answer is delivered")
        routes.moveFromHomeToWork(on: clock)
        try await settle(requests: 1)
        provider.stop()
    }
}
