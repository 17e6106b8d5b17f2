import Foundation
import Glibc
import Loop
import Synchronization
import TestBasics

/// One JSON report from gpsd as a plain client saw it.
public struct GPSDReport: Sendable {
    /// Monotonic nanoseconds when the line arrived.
    public let receivedAt: Int64
    /// The JSON line.
    public let line: String
    /// The `class` member.
    public let classTag: String
    /// The numeric members.
    public let numbers: [String: Double]
    /// The string members.
    public let strings: [String: String]

    /// `time` in seconds since the Unix epoch, when the report has one.
    public var time: Double? { strings["time"].flatMap(GPSDReport.seconds(iso8601:)) }

    /// Parses gpsd's `YYYY-MM-DDTHH:MM:SS.sssZ`.
    public static func seconds(iso8601 text: String) -> Double? {
        let parts = text.split(whereSeparator: { "-T:Z".contains($0) })
        guard parts.count == 6, let year = Int32(parts[0]), let month = Int32(parts[1]), let day = Int32(parts[2]),
            let hour = Int32(parts[3]), let minute = Int32(parts[4]), let second = Double(parts[5])
        else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = month - 1
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        return Double(timegm(&fields)) + second
    }

    init?(line: String, receivedAt: Int64) {
        guard let data = line.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let classTag = object["class"] as? String
        else { return nil }
        var numbers: [String: Double] = [:]
        var strings: [String: String] = [:]
        for (key, value) in object {
            if let text = value as? String {
                strings[key] = text
            } else if let number = value as? NSNumber {
                numbers[key] = number.doubleValue
            }
        }
        self.receivedAt = receivedAt
        self.line = line
        self.classTag = classTag
        self.numbers = numbers
        self.strings = strings
    }
}

/// A plain gpsd client over TCP (no libgps): it sends `?WATCH` and records every report with its arrival time,
/// so tests can compare what the daemon serves with what gpsd said.
public final class GPSDWatcher: Sendable {
    private struct State {
        var reports: [GPSDReport] = []
        var disconnected = false
        var stopRequested = false
    }

    private let state = Mutex(State())

    /// Connects to gpsd on 127.0.0.1:`port` and starts watching.
    public init(port: UInt16) throws {
        guard let fd = LoopbackTCP.connect(port: port) else {
            throw TestEnvironmentError("cannot connect to gpsd on port \(port)")
        }
        let command = Array("?WATCH={\"enable\":true,\"json\":true};\n".utf8)
        _ = command.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let thread = Thread { [self] in run(fd) }
        thread.start()
    }

    /// Every report so far.
    public var reports: [GPSDReport] { state.withLock { $0.reports } }
    /// The TPV reports with a fix (mode 2 or 3) so far.
    public var fixes: [GPSDReport] { reports.filter { $0.classTag == "TPV" && ($0.numbers["mode"] ?? 0) >= 2 } }
    /// True once gpsd closed the connection.
    public var disconnected: Bool { state.withLock { $0.disconnected } }

    /// Waits until gpsd has sent a fix with a time, `after` the given monotonic time if set; returns it.
    @concurrent
    public func timedFix(after: Int64 = 0, timeout: Duration = .seconds(10)) async throws -> GPSDReport {
        let found = Shared<GPSDReport?>(nil)
        try await eventually("gpsd to report a fix with a time", timeout: timeout) { [self] in
            found.value = fixes.first { $0.receivedAt > after && $0.time != nil }
            return found.value != nil
        }
        return found.value!
    }

    /// Stops watching, within 20 ms.
    public func close() { state.withLock { $0.stopRequested = true } }

    private func run(_ fd: Int32) {
        defer { Glibc.close(fd) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !state.withLock({ $0.stopRequested }) {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 20) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            let now = monotonicNanoseconds()
            guard count > 0 else {
                if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    state.withLock { $0.disconnected = true }
                    return
                }
                continue
            }
            pending += buffer[0..<count]
            var parsed: [GPSDReport] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if let report = GPSDReport(line: line.trimmingCharacters(in: .whitespacesAndNewlines), receivedAt: now)
                {
                    parsed.append(report)
                }
            }
            if !parsed.isEmpty { state.withLock { $0.reports += parsed } }
        }
    }
}
