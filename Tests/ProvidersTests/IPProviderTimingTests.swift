import Loop
import Synchronization
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// A web service whose answers the test gives one at a time, counting the requests.
private final class ScriptedService: HTTPTransport {
    private let state = Mutex<(answers: [Result<HTTPResponse, HTTPFailure>], requests: Int)>(([], 0))

    /// Answers the next request with `answer`.
    func willAnswer(_ answer: Result<HTTPResponse, HTTPFailure>) { state.withLock { $0.answers.append(answer) } }

    var requests: Int { state.withLock { $0.requests } }

    func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure> {
        state.withLock { state in
            state.requests += 1
            return state.answers.isEmpty ? .failure(.unreachable("no answer scripted")) : state.answers.removeFirst()
        }
    }
}

private let position = Result<HTTPResponse, HTTPFailure>.success(
    HTTPResponse(status: 200, body: Array(#"{"location": {"lat": 52.5, "lng": 13.4}, "accuracy": 12000}"#.utf8)))

private struct SilentLogger: Logger {
    func log(_ priority: LogPriority, _ message: String) {}
}

/// The IP provider's timers on a manual clock: it asks again exactly when its answer has stood its time, and after
/// a failure exactly when its backoff ends.
@Suite @BusActor struct IPProviderTimingTests {
    private let clock = ManualClock()
    private let service = ScriptedService()

    private func provider() -> (IPProvider, FixLog) {
        let provider = IPProvider(
            transport: service, url: "https://location.example/v1/geolocate", accuracy: nil, clock: clock,
            timers: clock, logger: SilentLogger())
        let fixes = FixLog()
        provider.onFix = { fixes.fixes.append($0) }
        return (provider, fixes)
    }

    /// Lets the lookups the provider started run (each is a task of its own, answered at once), then checks that
    /// the service has had `count` requests in all.
    private func settle(_ fixes: FixLog, requests count: Int) async throws {
        for _ in 0..<1000 { await Task.yield() }
        try #require(service.requests == count)
    }

    @Test func anAnswerStandsForItsRefreshIntervalThenIsAskedAgain() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(position)
        service.willAnswer(position)
        provider.start()
        try await settle(fixes, requests: 1)
        #expect(fixes.fixes.count == 1)
        clock.advance(by: IPProvider.refreshInterval - .seconds(1))
        try await settle(fixes, requests: 1)
        clock.advance(by: .seconds(1))
        try await settle(fixes, requests: 2)
        #expect(fixes.fixes.count == 2)
        provider.stop()
        clock.advance(by: IPProvider.refreshInterval * 2)
        try await settle(fixes, requests: 2)
    }

    @Test func aFailureIsTriedAgainWhenItsBackoffEnds() async throws {
        let (provider, fixes) = provider()
        service.willAnswer(.failure(.unreachable("down")))
        service.willAnswer(position)
        provider.start()
        try await settle(fixes, requests: 1)
        #expect(provider.availableLevel == .none && provider.unavailabilityReason == "service-unreachable")
        clock.advance(by: LookupBackoff.firstDelay - .milliseconds(1))
        try await settle(fixes, requests: 1)
        clock.advance(by: .milliseconds(1))
        try await settle(fixes, requests: 2)
        #expect(provider.availableLevel == .city && fixes.fixes.count == 1)
    }
}

/// The fixes a provider offered.
@BusActor
private final class FixLog {
    var fixes: [Fix] = []
}
