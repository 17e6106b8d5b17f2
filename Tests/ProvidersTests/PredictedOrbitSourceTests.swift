import Loop
import Synchronization
import TestBasics
import Testing
import WhereaboutsCore
import WhereaboutsProviders

/// A web server holding orbit files, whose answers the test gives, recording the URLs asked; with `held`, each GET
/// waits until the test releases it.
final class ScriptedOrbitServer: HTTPDownloader {
    private struct State {
        var answers: [Result<HTTPResponse, HTTPFailure>] = []
        var asked: [String] = []
        var waiting: [CheckedContinuation<Void, Never>] = []
        var held = false
    }
    private let state = Mutex(State())

    /// Answers the next GET with `answer`.
    func willAnswer(_ answer: Result<HTTPResponse, HTTPFailure>) { state.withLock { $0.answers.append(answer) } }

    /// Makes each GET wait until ``release()``.
    func hold() { state.withLock { $0.held = true } }

    /// Lets the GETs waiting go on, and those after them.
    func release() {
        let waiting = state.withLock { state in
            state.held = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// The URLs asked, in order.
    var asked: [String] { state.withLock { $0.asked } }

    func get(_ url: String, timeout: Duration, maximumResponseBytes: Int) async -> Result<HTTPResponse, HTTPFailure> {
        let held = state.withLock { state in
            state.asked.append(url)
            return state.held
        }
        if held {
            await withCheckedContinuation { continuation in
                let stillHeld = state.withLock { state in
                    if state.held { state.waiting.append(continuation) }
                    return state.held
                }
                if !stillHeld { continuation.resume() }
            }
        }
        return state.withLock { state in
            state.answers.isEmpty ? .failure(.unreachable("no answer scripted")) : state.answers.removeFirst()
        }
    }
}

/// What the source kept, and what NetworkManager says.
@BusActor
private final class OrbitLog {
    var cache = PredictedOrbitCache(capacity: PredictedOrbitCache.defaultCapacity)
    var saves = 0
    var loads = 0
    var metered = false
}

/// The predicted-orbit source on a manual clock with a scripted server: which URLs it asks, when it asks again,
/// and what it keeps.
@Suite @BusActor struct PredictedOrbitSourceTests {
    static let orbits = Array("XTRA".utf8)
    private let clock = ManualClock()
    private let server = ScriptedOrbitServer()
    private let log = OrbitLog()

    private func source(enabled: Bool = true, servers: [String]? = nil) -> PredictedOrbitSource {
        let log = self.log
        return PredictedOrbitSource(
            configuration: GNSSAssistanceConfig(enabled: enabled, servers: servers), networkPositioningEnabled: true,
            downloader: server, isMetered: { log.metered },
            loadCache: {
                log.loads += 1
                return log.cache
            },
            saveCache: {
                log.cache = $0
                log.saves += 1
            }, clock: clock, logger: SilentLogger())
    }

    private static func answer(_ headers: [HTTPHeader] = []) -> Result<HTTPResponse, HTTPFailure> {
        .success(HTTPResponse(status: 200, body: orbits, headers: headers))
    }

    @Test func aServerTheModemListsOverHTTPIsAskedOverHTTPSAndItsFileKept() async {
        let source = source()
        server.willAnswer(Self.answer())
        let file = await source.predictedOrbits(modemServers: ["http://xtra.example/xtra3grc.bin"])
        #expect(file?.data == Self.orbits)
        #expect(server.asked == ["https://xtra.example/xtra3grc.bin"])
        #expect(log.saves == 1 && log.cache.files.count == 1)
        clock.advance(by: .seconds(6 * 86_400))
        #expect(await source.predictedOrbits(modemServers: ["http://xtra.example/xtra3grc.bin"]) == file)
        #expect(server.asked.count == 1, "kept for 7 days")
    }

    @Test func twoModemsAskingAtOnceShareOneDownload() async {
        let source = source()
        server.hold()
        server.willAnswer(Self.answer())
        let first = Task { await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) }
        let second = Task { await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) }
        while server.asked.isEmpty { await Task.yield() }
        server.release()
        let files = [await first.value, await second.value]
        #expect(files[0] != nil && files[0] == files[1])
        #expect(server.asked.count == 1)
    }

    @Test func aMeteredConnectionRefusesWithoutCountingAsAFailure() async {
        let source = source()
        log.metered = true
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) == nil)
        #expect(server.asked.isEmpty)
        log.metered = false
        server.willAnswer(Self.answer())
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) != nil)
        #expect(server.asked.count == 1)
    }

    @Test func serversThatAllFailAreAskedAgainAnHourLaterAndTheConfiguredOnesFirst() async {
        let source = source(servers: ["https://mine.example/x", "https://backup.example/x"])
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) == nil)
        #expect(server.asked == ["https://mine.example/x", "https://backup.example/x"])
        clock.advance(by: PredictedOrbitDownloadRule.retryDelay - .milliseconds(1))
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) == nil)
        #expect(server.asked.count == 2)
        clock.advance(by: .milliseconds(1))
        server.willAnswer(.success(HTTPResponse(status: 404, body: [])))
        server.willAnswer(Self.answer())
        #expect(
            await source.predictedOrbits(modemServers: ["https://xtra.example/x"])?.source == "https://backup.example/x"
        )
    }

    @Test func aFileCalledStaleAtOnceIsUsedForAnHour() async {
        let source = source()
        server.willAnswer(Self.answer([HTTPHeader("Cache-Control", "max-age=0")]))
        server.willAnswer(Self.answer())
        let file = await source.predictedOrbits(modemServers: ["https://xtra.example/x"])
        #expect(file != nil)
        clock.advance(by: PredictedOrbitValidity.minimumValidity - .seconds(1))
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) == file)
        clock.advance(by: .seconds(1))
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) != file)
        #expect(server.asked.count == 2)
    }

    @Test func withTheOrbitsOffNothingIsAskedNorRead() async {
        let source = source(enabled: false)
        #expect(await source.predictedOrbits(modemServers: ["https://xtra.example/x"]) == nil)
        #expect(server.asked.isEmpty && log.loads == 0)
    }
}
