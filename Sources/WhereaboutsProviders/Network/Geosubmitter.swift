import Loop
import WhereaboutsCore

/// Contributing (`[wifi] submit-data=true`, off by default): a satellite fix of 100 m or better and the access
/// points seen there go to the Ichnaea `/v2/geosubmit` URL, at most once a minute (``SubmissionPacer``).
///
/// What is sent is what ``AccessPointSelection`` lets leave the machine, with the SSIDs (beaconDB ignores
/// submissions without them) and frequencies, and `submission-nick=` as `X-Nickname` unless it is empty.
/// A failed submission is logged and dropped: nothing is queued on disk.
@BusActor
public final class Geosubmitter {
    /// How long one submission may take.
    public static let timeout: Duration = .seconds(30)

    private let url: String
    private let nickname: String
    private let transport: any HTTPTransport
    private let clock: any WhereaboutsCore.Clock
    private let logger: any Logger
    private var pacer = SubmissionPacer()
    private var inFlight = false

    /// Submissions sent since the daemon started.
    public private(set) var submissions: UInt32 = 0

    public init(
        url: String, nickname: String, transport: any HTTPTransport, clock: any WhereaboutsCore.Clock,
        logger: any Logger
    ) {
        self.url = url
        self.nickname = nickname
        self.transport = transport
        self.clock = clock
        self.logger = logger
    }

    /// Takes a satellite fix and the usable access points of a scan made at `scannedAt`; submits them when the
    /// pacing rule allows.
    public func offer(_ fix: Fix, usable: [AccessPoint], scannedAt: WallTime) {
        guard !inFlight,
            let item = pacer.submission(for: fix, scan: usable, scannedAt: scannedAt, now: clock.monotonicNow)
        else { return }
        inFlight = true
        submissions &+= 1
        let headers = nickname.isEmpty ? [] : [HTTPHeader("X-Nickname", nickname)]
        let request = HTTPRequest(
            url: url, body: IchnaeaQuery.submission(items: [item]), headers: headers, timeout: Self.timeout)
        let transport = self.transport
        BusActor.task { [weak self] in
            let result = await transport.post(request)
            self?.finished(result)
        }
    }

    private func finished(_ result: Result<HTTPResponse, HTTPFailure>) {
        inFlight = false
        switch result {
        case .success(let response) where response.status == 200:
            logger.debug("contributing: submitted to \(loggableURL(url))")
        case .success(let response):
            logger.warning("contributing: \(loggableURL(url)) answered HTTP \(response.status); the report is dropped")
        case .failure(let failure):
            logger.warning("contributing: \(loggableURL(url)): \(failure); the report is dropped")
        }
    }
}
