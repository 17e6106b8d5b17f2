/// What a `/v1/geolocate` query asked for.
public enum QueryKind: Sendable, Equatable {
    /// A position from access points, every fallback off (``IchnaeaQuery/wifi(_:)``).
    case wifi
    /// A position from serving cells, with access points or without (``IchnaeaQuery/geolocate(accessPoints:cells:)``
    /// given cells): the IP fallback off, the cell-area one (`lacf`) allowed.
    case cells
    /// A position from the client's IP address (``IchnaeaQuery/ip()``).
    case ip
}

/// What an Ichnaea-compatible service's answer to a `/v1/geolocate` query means.
public enum IchnaeaOutcome: Sendable, Equatable {
    /// A position: degrees WGS84 and a 95% radius in metres.
    case position(latitude: Double, longitude: Double, accuracy: Double)
    /// The service knows too little about what it was sent (HTTP 404): no fix, and not an error.
    case notFound
    /// The service refused the request (4xx other than 404 and 429): a bad or missing API key, a daily limit, a
    /// request it cannot parse. Asking again soon will not help.
    case refused(status: Int, message: String)
    /// The service is in trouble (5xx) or asks for fewer requests (429). Asking again later may help.
    case serverTrouble(status: Int, message: String)
    /// The answer cannot be used; the text says why.
    case malformed(String)

    /// The largest accuracy believed, in metres: half the Earth's circumference.
    public static let maximumAccuracy = 20_000_000.0
    /// The largest accuracy believed from a Wi-Fi query, in metres. Ichnaea's Wi-Fi estimates are at most
    /// 500 m and beaconDB's come from access points it places within 500 m; a radius of kilometres is a
    /// position from some other source (the IP address, a cell area), which a Wi-Fi fix must never be.
    public static let maximumWiFiAccuracy = 10_000.0
    /// The smallest accuracy, in metres, of a position Ichnaea takes from cells: its cell estimates are never
    /// finer than 1 km. An answer to a query with access points and cells at least this coarse came from the cells,
    /// not from the access points.
    public static let smallestCellAccuracy = 1_000.0
    /// The largest accuracy believed from a cell query, in metres: Ichnaea's largest cell-area estimate. Anything
    /// coarser did not come from the cells.
    public static let maximumCellAccuracy = 500_000.0
    /// The most characters of a server's message kept.
    public static let maximumMessageLength = 200

    /// Interprets `response` to a query of `kind`.
    ///
    /// * 200 with `{"location":{"lat":…,"lng":…},"accuracy":…}`: ``position(latitude:longitude:accuracy:)`` when
    ///   the latitude is in −90…90, the longitude in −180…180 and the accuracy finite, above 0 and at most
    ///   ``maximumAccuracy`` (``maximumWiFiAccuracy`` for Wi-Fi, ``maximumCellAccuracy`` for cells);
    ///   ``malformed(_:)`` naming the field otherwise. Other members are ignored, except that on a Wi-Fi query a
    ///   `fallback` member (`"ipf"`, `"lacf"`) makes the answer ``malformed(_:)``: the server placed the client by
    ///   something the query did not allow, and that is never a Wi-Fi fix. On a cell query only `"lacf"` is
    ///   allowed, the cell's location area; on an IP query a fallback is what was asked for.
    /// * 404: ``notFound``, whatever the body.
    /// * 429 and 5xx: ``serverTrouble(status:message:)``; other 4xx: ``refused(status:message:)``. The message is
    ///   Ichnaea's error (`{"error":{"message":…,"errors":[{"reason":…}]}}`) as `reason: message`, or the body
    ///   as text when it is not such JSON, with control characters removed and cut to ``maximumMessageLength``.
    /// * Any other status: ``malformed(_:)``.
    public static func interpret(_ response: HTTPResponse, kind: QueryKind) -> IchnaeaOutcome {
        switch response.status {
        case 200: return position(in: response.body, kind: kind)
        case 404: return .notFound
        case 429, 500...599: return .serverTrouble(status: response.status, message: errorMessage(in: response.body))
        case 400...499: return .refused(status: response.status, message: errorMessage(in: response.body))
        default: return .malformed("unexpected HTTP status \(response.status)")
        }
    }

    /// Reads a 200 answer's position.
    private static func position(in body: [UInt8], kind: QueryKind) -> IchnaeaOutcome {
        let answer: JSONValue
        do {
            answer = try JSONValue.parse(body)
        } catch {
            return .malformed("the answer is not JSON: \(sanitised(error.description))")
        }
        guard answer.objectValue != nil else {
            return .malformed("the answer is \(answer.typeDescription), not an object")
        }
        if kind != .ip, let fallback = answer["fallback"], kind == .wifi || fallback != "lacf" {
            let name = fallback.stringValue.map { " (\(sanitised($0)))" } ?? ""
            let allowed = kind == .wifi ? "none was allowed" : "only the cell area one (lacf) was allowed"
            return .malformed("the server answered from a fallback\(name) although \(allowed)")
        }
        guard let location = answer["location"] else { return .malformed("the answer has no location") }
        guard location.objectValue != nil else {
            return .malformed("location is \(location.typeDescription), not an object")
        }
        let latitude: Double
        let longitude: Double
        let accuracy: Double
        switch number(location["lat"], named: "location.lat", in: -90...90) {
        case .success(let value): latitude = value
        case .failure(let problem): return .malformed(problem.text)
        }
        switch number(location["lng"], named: "location.lng", in: -180...180) {
        case .success(let value): longitude = value
        case .failure(let problem): return .malformed(problem.text)
        }
        switch number(answer["accuracy"], named: "accuracy", in: 0...maximumAccuracy) {
        case .success(let value): accuracy = value
        case .failure(let problem): return .malformed(problem.text)
        }
        guard accuracy > 0 else { return .malformed("accuracy is 0") }
        if kind == .wifi, accuracy > maximumWiFiAccuracy {
            return .malformed(
                "accuracy \(JSONWriter.text(of: accuracy)) m is not a Wi-Fi position; the server placed the client "
                    + "by something else")
        }
        if kind == .cells, accuracy > maximumCellAccuracy {
            return .malformed(
                "accuracy \(JSONWriter.text(of: accuracy)) m is not a cell position; the server placed the client "
                    + "by something else")
        }
        return .position(latitude: latitude, longitude: longitude, accuracy: accuracy)
    }

    /// Why a field cannot be used.
    private struct FieldProblem: Error {
        let text: String
    }

    /// The finite number in `value`, within `range`, or why not.
    private static func number(
        _ value: JSONValue?, named name: String, in range: ClosedRange<Double>
    ) -> Result<Double, FieldProblem> {
        guard let value else { return .failure(FieldProblem(text: "\(name) is missing")) }
        guard let number = value.numberValue else {
            return .failure(FieldProblem(text: "\(name) is \(value.typeDescription), not a number"))
        }
        guard number.isFinite, range.contains(number) else {
            return .failure(FieldProblem(text: "\(name) \(JSONWriter.text(of: number)) is out of range"))
        }
        return .success(number)
    }

    /// The error an Ichnaea error body describes, or the body itself as text.
    private static func errorMessage(in body: [UInt8]) -> String {
        if let answer = try? JSONValue.parse(body), let error = answer["error"] {
            if let text = error.stringValue { return sanitised(text) }
            let message = error["message"]?.stringValue
            let reason = error["errors"]?.arrayValue?.first?["reason"]?.stringValue
            switch (reason, message) {
            case (let reason?, let message?) where reason != message: return sanitised(reason + ": " + message)
            case (let reason?, _): return sanitised(reason)
            case (nil, let message?): return sanitised(message)
            case (nil, nil): break
            }
        }
        return sanitised(String(decoding: body, as: UTF8.self))
    }

    /// `text` without control characters or line and paragraph separators, with surrounding whitespace trimmed,
    /// cut to ``maximumMessageLength`` characters: a server's words, safe to put on one log line.
    static func sanitised(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: scalars.append(" ")
            default: scalars.append(scalar)
            }
        }
        let collapsed = String(scalars).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        return String(collapsed.prefix(maximumMessageLength))
    }
}
