import FuzzSupport
import WhereaboutsCore

/// The JSON reader and the interpretation of an Ichnaea answer.
///
/// * JSON: the bytes either are refused with an offset inside them, or are a value whose text reads back as the
///   same value, and whose own text is the same bytes again.
/// * The answer: the bytes as the body of a 200 (and of a status picked by the first byte) to a Wi-Fi and an IP
///   query; a position is in range and as accurate as the query kind allows, and every message is one log line.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIchnaea(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkJSON(bytes)
    let statuses = [200, 404, 400, 403, 500, 429, 302, 503]
    let picked = statuses[Int(bytes.first ?? 0) % statuses.count]
    for status in picked == 200 ? [200] : [200, picked] {
        for kind in [QueryKind.wifi, .ip] {
            let outcome = IchnaeaOutcome.interpret(HTTPResponse(status: status, body: bytes), kind: kind)
            checkOutcome(outcome, status: status, kind: kind)
        }
    }
    return 0
}

private func checkJSON(_ bytes: [UInt8]) {
    let value: JSONValue
    do {
        value = try JSONValue.parse(bytes)
    } catch {
        precondition((0...bytes.count).contains(error.offset), "offset \(error.offset) outside 0...\(bytes.count)")
        _ = error.description
        return
    }
    let text = value.serializedBytes
    precondition(Array(value.serialized.utf8) == text, "serialized and serializedBytes differ")
    let reparsed: JSONValue
    do {
        reparsed = try JSONValue.parse(text)
    } catch {
        preconditionFailure("a value's own text is refused: \(error)")
    }
    precondition(reparsed == value, "a value's own text parses to a different value")
    precondition(reparsed.serializedBytes == text, "a value's own text is not written the same way again")
    _ = value.typeDescription
}

/// The most characters of a malformed answer's explanation: the service's words, cut to the message limit, in a
/// sentence of ours.
private let maximumExplanationLength = IchnaeaOutcome.maximumMessageLength + 100

private func checkOutcome(_ outcome: IchnaeaOutcome, status: Int, kind: QueryKind) {
    switch outcome {
    case .position(let latitude, let longitude, let accuracy):
        precondition(status == 200, "a position from HTTP \(status)")
        precondition(latitude.isFinite && (-90...90).contains(latitude), "latitude out of range: \(latitude)")
        precondition(longitude.isFinite && (-180...180).contains(longitude), "longitude out of range: \(longitude)")
        let maximum = kind == .wifi ? IchnaeaOutcome.maximumWiFiAccuracy : IchnaeaOutcome.maximumAccuracy
        precondition(accuracy.isFinite && accuracy > 0 && accuracy <= maximum, "accuracy out of range: \(accuracy)")
    case .notFound:
        precondition(status == 404, "not found from HTTP \(status)")
    case .refused(let answered, let message):
        precondition(
            answered == status && (400...499).contains(status) && status != 404 && status != 429,
            "refused from HTTP \(status)")
        checkMessage(message, limit: IchnaeaOutcome.maximumMessageLength)
    case .serverTrouble(let answered, let message):
        precondition(
            answered == status && (status == 429 || (500...599).contains(status)),
            "server trouble from HTTP \(status)")
        checkMessage(message, limit: IchnaeaOutcome.maximumMessageLength)
    case .malformed(let why):
        precondition(!why.isEmpty, "a malformed answer without an explanation")
        checkMessage(why, limit: maximumExplanationLength)
    }
}

/// A message is one line of at most `limit` characters: no control characters, line or paragraph separators.
private func checkMessage(_ message: String, limit: Int) {
    precondition(message.count <= limit, "a message of \(message.count) characters: \(message.debugDescription)")
    for scalar in message.unicodeScalars {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator:
            preconditionFailure("a message holds U+\(String(scalar.value, radix: 16)): \(message.debugDescription)")
        default:
            break
        }
    }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzIchnaea) }
    }
#endif
