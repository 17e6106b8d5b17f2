import Testing
import WhereaboutsCore

@Suite("Lookup backoff")
struct LookupBackoffTests {
    @Test func transientFailuresDoubleTheWaitUpToTenMinutes() {
        var backoff = LookupBackoff()
        #expect(backoff.allowsAttempt(now: WiFiFixtures.monotonic(0)))
        var now = 0.0
        var delays: [Int64] = []
        var logged: [Bool] = []
        for _ in 0..<10 {
            let step = backoff.failed(.transient, now: WiFiFixtures.monotonic(now))
            delays.append(step.delay.components.seconds)
            logged.append(step.shouldLog)
            #expect(step.retryAt == WiFiFixtures.monotonic(now) + step.delay)
            #expect(!backoff.allowsAttempt(now: step.retryAt + .nanoseconds(-1)))
            #expect(backoff.allowsAttempt(now: step.retryAt))
            now += step.delay.seconds
        }
        #expect(delays == [10, 20, 40, 80, 160, 320, 600, 600, 600, 600])
        #expect(logged == [true] + Array(repeating: false, count: 9))
        #expect(backoff.consecutiveTransientFailures == 10)
        // Many more never overflow.
        for _ in 0..<200 { backoff.failed(.transient, now: WiFiFixtures.monotonic(now)) }
        #expect(backoff.failed(.transient, now: WiFiFixtures.monotonic(now)).delay == .seconds(600))
    }

    @Test func joiningANetworkEndsATransientWaitButNotARefusal() {
        var backoff = LookupBackoff()
        backoff.failed(.transient, now: WiFiFixtures.monotonic(0))
        backoff.failed(.transient, now: WiFiFixtures.monotonic(10))
        #expect(!backoff.allowsAttempt(now: WiFiFixtures.monotonic(11)))
        backoff.networkChanged()
        #expect(backoff.allowsAttempt(now: WiFiFixtures.monotonic(11)))
        #expect(backoff.failed(.transient, now: WiFiFixtures.monotonic(12)).delay == .seconds(10))

        backoff.failed(.refused, now: WiFiFixtures.monotonic(20))
        backoff.networkChanged()
        #expect(!backoff.allowsAttempt(now: WiFiFixtures.monotonic(21)))
        #expect(backoff.retryAt == WiFiFixtures.monotonic(20) + LookupBackoff.refusalDelay)
    }

    @Test func aSuccessResetsEverything() {
        var backoff = LookupBackoff()
        backoff.failed(.transient, now: WiFiFixtures.monotonic(0))
        backoff.failed(.transient, now: WiFiFixtures.monotonic(10))
        #expect(!backoff.allowsAttempt(now: WiFiFixtures.monotonic(20)))
        backoff.succeeded()
        #expect(backoff.allowsAttempt(now: WiFiFixtures.monotonic(20)))
        #expect(backoff.retryAt == nil)
        let step = backoff.failed(.transient, now: WiFiFixtures.monotonic(30))
        #expect(step.delay == .seconds(10) && step.shouldLog)
    }

    @Test func refusalsWaitAnHourAndAreLoggedOnceUntilASuccess() {
        var backoff = LookupBackoff()
        let first = backoff.failed(.refused, now: WiFiFixtures.monotonic(0))
        #expect(
            first
                == LookupBackoff.BackoffStep(
                    delay: .seconds(3600), retryAt: WiFiFixtures.monotonic(3600), shouldLog: true))
        let second = backoff.failed(.refused, now: WiFiFixtures.monotonic(3600))
        #expect(second.delay == .seconds(3600) && !second.shouldLog)
        // A transient failure between refusals does not make the next refusal worth logging again.
        backoff.failed(.transient, now: WiFiFixtures.monotonic(7200))
        #expect(!backoff.failed(.refused, now: WiFiFixtures.monotonic(7210)).shouldLog)
        backoff.succeeded()
        #expect(backoff.failed(.refused, now: WiFiFixtures.monotonic(20_000)).shouldLog)
    }

    @Test func aRefusalRestartsTheTransientCount() {
        var backoff = LookupBackoff()
        for second in [0.0, 10, 30] { backoff.failed(.transient, now: WiFiFixtures.monotonic(second)) }
        backoff.failed(.refused, now: WiFiFixtures.monotonic(70))
        let step = backoff.failed(.transient, now: WiFiFixtures.monotonic(3670))
        #expect(step.delay == .seconds(10) && step.shouldLog)
    }

    @Test func outcomesAndExchangeFailuresMapOntoKinds() {
        var backoff = LookupBackoff()
        #expect(
            backoff.record(.serverTrouble(status: 503, message: ""), now: WiFiFixtures.monotonic(0))?.delay
                == .seconds(10))
        #expect(backoff.record(.malformed("portal"), now: WiFiFixtures.monotonic(10))?.delay == .seconds(20))
        #expect(backoff.record(HTTPFailure.timedOut("20 s"), now: WiFiFixtures.monotonic(30)).delay == .seconds(40))
        #expect(backoff.record(.notFound, now: WiFiFixtures.monotonic(70)) == nil)
        #expect(backoff.allowsAttempt(now: WiFiFixtures.monotonic(70)))
        #expect(
            backoff.record(.refused(status: 403, message: "dailyLimitExceeded"), now: WiFiFixtures.monotonic(80))?.delay
                == .seconds(3600))
        #expect(
            backoff.record(.position(latitude: 1, longitude: 2, accuracy: 3), now: WiFiFixtures.monotonic(4000)) == nil)
        #expect(!backoff.refusalLogged)

        let transient: [HTTPFailure] = [
            .unresolvable("x"), .unreachable("x"), .timedOut("x"), .tls("x"), .tooLarge(1), .other("x"),
        ]
        #expect(transient.allSatisfy { $0.failureKind == .transient })
        #expect(HTTPFailure.unavailable("no libcurl").failureKind == .refused)
        #expect(IchnaeaOutcome.notFound.failureKind == nil)
        #expect(IchnaeaOutcome.refused(status: 401, message: "").failureKind == .refused)
        #expect(IchnaeaOutcome.serverTrouble(status: 429, message: "").failureKind == .transient)
    }
}
