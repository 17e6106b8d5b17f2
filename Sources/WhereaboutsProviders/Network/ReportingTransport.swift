import Loop
import WhereaboutsCore

/// A transport that tells of each request it carries once it ended, summarised as a ``NetworkLookup`` (its host,
/// how many access points and cells it carried and its outcome, nothing it identifies), for the users' history of
/// location use; the providers that ask through it are not changed.
public struct ReportingTransport: HTTPTransport {
    private let transport: any HTTPTransport
    private let kind: LookupKind
    private let clock: any Clock
    private let report: @BusActor @Sendable (NetworkLookup) -> Void

    /// Carries requests of `kind` over `transport`, telling `report` of each, on the bus thread, before its
    /// provider reads the answer; `clock` dates them.
    public init(
        _ transport: any HTTPTransport, kind: LookupKind, clock: any Clock,
        report: @escaping @BusActor @Sendable (NetworkLookup) -> Void
    ) {
        self.transport = transport
        self.kind = kind
        self.clock = clock
        self.report = report
    }

    public func post(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPFailure> {
        let result = await transport.post(request)
        await report(NetworkLookup(kind: kind, request: request, result: result, time: clock.wallNow))
        return result
    }
}
