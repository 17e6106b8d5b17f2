import TestBasics

/// Polls `condition` every 10 ms without blocking a thread, up to `timeout`.
@concurrent
public func eventually(
    _ what: String, timeout: Duration = .seconds(10), _ condition: @Sendable () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            throw TestEnvironmentError("timed out after \(timeout) waiting for \(what)")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
