extension NetworkLookup {
    /// The lookup a request of `kind` made, summarised at `time` from `request` and what came back: the URL's
    /// host, how many access points and cells the body carried (an Ichnaea `/v1/geolocate` query, or a
    /// `/v2/geosubmit` contribution of items, each counted), and the outcome as ``IchnaeaOutcome`` reads the
    /// answer (for a contribution: accepted on HTTP 200). Nothing else of the body is kept.
    public init(
        kind: LookupKind, request: HTTPRequest, result: Result<HTTPResponse, HTTPFailure>, time: WallTime
    ) {
        let body = try? JSONValue.parse(request.body)
        let reports = kind == .submission ? body?["items"]?.arrayValue ?? [] : body.map { [$0] } ?? []
        let accessPoints = reports.reduce(0) { $0 + ($1["wifiAccessPoints"]?.arrayValue?.count ?? 0) }
        let cells = reports.reduce(0) { $0 + ($1["cellTowers"]?.arrayValue?.count ?? 0) }
        self.init(
            time: time, kind: kind, host: Self.host(of: request.url), accessPoints: accessPoints, cells: cells,
            outcome: Self.outcome(of: result, kind: kind, withCells: cells > 0), apps: [])
    }

    /// The host of `url`: what is between `://` (or the start) and the next `/`, `?` or `#`, without any
    /// `user:password@` and `:port`; an IPv6 literal without its brackets.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        rest = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            return String(rest[rest.index(after: rest.startIndex)..<close])
        }
        if let colon = rest.firstIndex(of: ":") { rest = rest[..<colon] }
        return String(rest)
    }

    /// The outcome of a request of `kind`, read as its provider reads it: a Wi-Fi query carrying cells as a cell
    /// query.
    private static func outcome(of result: Result<HTTPResponse, HTTPFailure>, kind: LookupKind, withCells: Bool)
        -> LookupOutcome
    {
        guard case .success(let response) = result else { return .failed }
        let query: QueryKind
        switch kind {
        case .submission: return response.status == 200 ? .accepted : .failed
        case .wifi: query = withCells ? .cells : .wifi
        case .cell: query = .cells
        case .ip: query = .ip
        }
        switch IchnaeaOutcome.interpret(response, kind: query) {
        case .position(_, _, let accuracy): return .position(accuracy: accuracy)
        case .notFound: return .notFound
        case .refused, .serverTrouble, .malformed: return .failed
        }
    }
}
