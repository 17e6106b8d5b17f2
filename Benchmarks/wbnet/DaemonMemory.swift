import Foundation
import Glibc
import TestSupport

/// The daemon's memory (RSS, private; KiB) as installed, at each stage of its life on a machine.
struct DaemonMemory {
    var off = (rss: 0, privateKiB: 0)
    var idle = (rss: 0, privateKiB: 0)
    var afterStart = (rss: 0, privateKiB: 0)
    /// Whether that client got a fix (it should not: wpa_supplicant held nothing).
    var startGotFix = false
}

/// Memory of fresh daemons: with network positioning off, on and idle, and on after one client's `Start` with
/// nothing to look up (polkit asked, so libpolkit-gobject and GLib are loaded; libcurl is not).
@concurrent
func measureDaemonMemory(server: IchnaeaServer, authority: TestCertificateAuthority) async throws -> DaemonMemory {
    var figures = DaemonMemory()
    let off = try InstalledDaemon(url: server.url(), authority: authority, network: false)
    try await Task.sleep(for: .milliseconds(300))
    figures.off = memory(try off.pid)
    off.stop()
    let on = try InstalledDaemon(url: server.url(), authority: authority)
    defer { on.stop() }
    try await Task.sleep(for: .milliseconds(300))
    figures.idle = memory(try on.pid)
    figures.startGotFix = try AppClient.firstFix(on: on.bus, app: InstalledDaemon.app, timeout: 1) != nil
    try await Task.sleep(for: .milliseconds(300))
    figures.afterStart = memory(try on.pid)
    return figures
}
