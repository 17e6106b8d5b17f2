import Foundation
import Glibc
import TestBasics

/// A command run as a Flatpak app runs, as far as the desktop portal and the service can tell: inside `bwrap`, with
/// a `/.flatpak-info` at the root of its sandbox, in a transient scope named as Flatpak names it
/// (`app-flatpak-<id>-<number>.scope` under the user manager's `app.slice`).
///
/// Made by ``DesktopPortalHarness/spawnApp(_:flatpakInfo:command:)``. The sandbox sees `/usr` (and the merged
/// `/bin`, `/lib`, `/lib64`, `/sbin` links), `/etc`, its own `/proc`, `/dev` and `/tmp`, the harness folder (for the
/// session bus) and `Tests/Clients`, at their own paths; it has a pid namespace of its own and dies with `bwrap`.
public final class SandboxedApp: @unchecked Sendable {
    /// The application id its scope is named after.
    public let appID: String
    /// The scope it runs in.
    public let scope: UnitCgroup
    /// `bwrap`, which the launcher's shell became (its pid is the scope's first process).
    public let process: ChildProcess

    init(appID: String, scope: UnitCgroup, process: ChildProcess) {
        self.appID = appID
        self.scope = scope
        self.process = process
    }

    /// What the command wrote to standard output and error so far (bwrap's own complaints too).
    public var log: String { process.log }

    /// Waits up to `timeout` seconds for a line of output starting with `prefix` and returns it.
    ///
    /// - Throws: ``TestEnvironmentError`` when the app exits or the time runs out first.
    public func waitForLine(startingWith prefix: String, timeout: Double = 20) throws -> String {
        var found: String?
        try Wait.until("\(appID) to print a line starting with \"\(prefix)\"", timeout: timeout) {
            found = log.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
            if found != nil { return true }
            guard process.isRunning else {
                throw TestEnvironmentError("\(appID) exited, code \(process.exitCode.map(String.init) ?? "?"):\n\(log)")
            }
            return false
        }
        return found ?? ""
    }

    /// Waits up to `timeout` seconds for the app to exit and returns its exit code (-1 when killed by a signal).
    public func waitForExit(timeout: Double = 30) throws -> Int32 {
        try process.wait(timeout: timeout)
        return process.exitCode ?? -1
    }

    /// Stops the app (SIGTERM, then SIGKILL) and removes its scope.
    public func stop() {
        process.stop(grace: 5)
        scope.remove()
    }

    deinit { stop() }
}
