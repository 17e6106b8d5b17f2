import Testing
import WhereaboutsCore

@Suite("Reconnect backoff")
struct ReconnectBackoffTests {
    @Test func pausesStartAtAQuarterSecondAndDoubleUpToEightSeconds() {
        var backoff = ReconnectBackoff()
        let pauses = (0..<9).map { _ in backoff.failed() }
        #expect(pauses == [250, 500, 1000, 2000, 4000, 8000, 8000, 8000, 8000].map { .milliseconds($0) })
        #expect(backoff.nextDelay == .seconds(8))
    }

    @Test func aGoodConnectionStartsTheSeriesOver() {
        var backoff = ReconnectBackoff()
        _ = backoff.failed()
        _ = backoff.failed()
        _ = backoff.failed()
        backoff.succeeded()
        #expect(backoff == ReconnectBackoff())
        #expect(backoff.failed() == .milliseconds(250))
        #expect(backoff.failed() == .milliseconds(500))
    }

    @Test func aLongOutageStaysAtEightSeconds() {
        var backoff = ReconnectBackoff()
        for _ in 0..<10_000 { _ = backoff.failed() }
        #expect(backoff.failed() == .seconds(8))
    }
}
