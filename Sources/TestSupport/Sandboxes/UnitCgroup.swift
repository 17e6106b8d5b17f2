import Foundation
import Glibc
import TestBasics

/// A cgroup on the path systemd would give a unit, made by hand in every hierarchy systemd keeps units in, so that
/// a process started in it shows that unit in its `/proc/PID/cgroup` as it would under systemd.
///
/// systemd places a process on the same path in the unified (cgroup v2) hierarchy and, on a hybrid system, in the
/// `name=systemd` v1 one; both are used where mounted (on a pure v2 system the unified one is `/sys/fs/cgroup`
/// itself). The tests run as root, which may make cgroups there.
///
/// A process joins before it runs the program, through ``launcher``, so that nothing it starts is left outside.
/// ``remove()`` removes the unit's own cgroup and the parents this value made, deepest first; the kernel refuses to
/// remove one that still holds a process or another cgroup, so a cgroup another test still uses stays.
public final class UnitCgroup: @unchecked Sendable {
    /// The path inside each hierarchy, such as
    /// `/user.slice/user-0.slice/user@0.service/session.slice/xdg-desktop-portal.service`.
    public let path: String
    /// The hierarchies the cgroup is made in.
    public let hierarchies: [Hierarchy]
    /// The folders made for this cgroup that did not exist before, shallowest first.
    private var made: [URL] = []
    private let lock = NSLock()

    /// The path of a unit of the user manager of `uid`: `slice` (`app.slice`, `session.slice`, ...) holding
    /// `unit`, as `/user.slice/user-UID.slice/user@UID.service/SLICE/UNIT`.
    public static func userUnitPath(uid: uid_t, slice: String, unit: String) -> String {
        "/user.slice/user-\(uid).slice/user@\(uid).service/\(slice)/\(unit)"
    }

    /// The name of a transient scope as `flatpak run` names the one it puts an app in,
    /// `app-flatpak-<id>-<number>.scope` (Flatpak's number is the app's pid; any number reads the same), the id
    /// escaped as systemd escapes a unit name: `-` and any byte but ASCII letters, digits, `_`, `.` and `:` as
    /// `\xNN`.
    public static func flatpakScopeName(appID: String, number: UInt64) -> String {
        var escaped = ""
        for byte in appID.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"):
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                escaped += String(format: "\\x%02x", byte)
            }
        }
        return "app-flatpak-\(escaped)-\(number).scope"
    }

    /// One hierarchy systemd keeps units in: where it is mounted, and whether it is the unified (cgroup v2) one
    /// or the `name=systemd` v1 one.
    public struct Hierarchy: Sendable, Equatable {
        /// The mount point, such as `/sys/fs/cgroup/unified`.
        public var mountPoint: URL
        /// True for the unified hierarchy, listed as `0::PATH` in `/proc/PID/cgroup`; false for `name=systemd`.
        public var isUnified: Bool
    }

    /// The hierarchies systemd keeps units in on this machine, from `/proc/self/mounts`: the `cgroup2` mount and
    /// the `cgroup` one with `name=systemd`.
    ///
    /// - Throws: ``TestEnvironmentError`` when neither is mounted.
    public static func systemdHierarchies() throws -> [Hierarchy] {
        let mounts = try String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)
        var found: [Hierarchy] = []
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 4 else { continue }
            let mountPoint = URL(fileURLWithPath: String(fields[1]))
            if fields[2] == "cgroup2" {
                found.append(Hierarchy(mountPoint: mountPoint, isUnified: true))
            } else if fields[2] == "cgroup", fields[3].split(separator: ",").contains("name=systemd") {
                found.append(Hierarchy(mountPoint: mountPoint, isUnified: false))
            }
        }
        guard !found.isEmpty else { throw TestEnvironmentError("no cgroup2 or name=systemd hierarchy is mounted") }
        return found
    }

    /// Makes the cgroup `path` (starting with `/`) in every hierarchy systemd keeps units in.
    public init(path: String) throws {
        guard path.hasPrefix("/"), !path.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else {
            throw TestEnvironmentError("not a cgroup path: \(path)")
        }
        self.path = path
        hierarchies = try Self.systemdHierarchies()
        for hierarchy in hierarchies {
            var folder = hierarchy.mountPoint
            for component in path.split(separator: "/") {
                folder.appendPathComponent(String(component))
                if mkdir(folder.path, 0o755) == 0 {
                    made.append(folder)
                } else if errno != EEXIST {
                    let reason = String(cString: strerror(errno))
                    remove(grace: 0)
                    throw TestEnvironmentError("cannot make the cgroup \(folder.path): \(reason)")
                }
            }
        }
    }

    /// A command prefix that runs the command after it in this cgroup: `/bin/sh` moves itself into the cgroup in
    /// every hierarchy, then execs the command, which keeps the shell's pid. Another test removing a parent at the
    /// same moment is met by making it again.
    public var launcher: [String] {
        let folders = hierarchies.map { $0.mountPoint.path + path }
        let script = """
            join() {
                for attempt in 1 2 3 4 5 6 7 8 9 10; do
                    mkdir -p "$1" 2>/dev/null
                    if echo $$ 2>/dev/null >"$1/cgroup.procs"; then return 0; fi
                done
                echo "cannot join the cgroup $1" >&2
                exit 1
            }
            \(folders.map { "join \(shellQuoted($0))" }.joined(separator: "\n"))
            exec "$@"
            """
        return ["/bin/sh", "-c", script, "sh"]
    }

    /// Whether `/proc/PID/cgroup` of `pid` shows it in this cgroup in every hierarchy.
    public func holds(_ pid: pid_t) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) else { return false }
        let entries = text.split(separator: "\n").compactMap { line -> (controllers: Substring, path: Substring)? in
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            return fields.count == 3 ? (fields[1], fields[2]) : nil
        }
        return hierarchies.allSatisfy { hierarchy in
            entries.contains { entry in
                let named =
                    hierarchy.isUnified
                    ? entry.controllers.isEmpty : entry.controllers.split(separator: ",").contains("name=systemd")
                return named && entry.path == path
            }
        }
    }

    /// Whether no process is in the cgroup in any hierarchy (a missing cgroup holds none).
    public var isEmpty: Bool {
        hierarchies.allSatisfy { hierarchy in
            let procs = hierarchy.mountPoint.appendingPathComponent(String(path.dropFirst()))
                .appendingPathComponent("cgroup.procs")
            let text = (try? String(contentsOf: procs, encoding: .utf8)) ?? ""
            return text.allSatisfy(\.isWhitespace)
        }
    }

    /// Removes the unit's own cgroup and the parents made for it, deepest first, in every hierarchy; one that
    /// still holds a process or a cgroup is left. It first waits up to `grace` seconds for the cgroup to empty:
    /// the processes of a sandbox whose `bwrap` was stopped are killed with it but reaped a little later.
    public func remove(grace: Double = 2) {
        _ = try? Wait.until("\(path) to empty", timeout: grace) { isEmpty }
        lock.withLock {
            var folders = made
            for hierarchy in hierarchies {
                let own = hierarchy.mountPoint.appendingPathComponent(String(path.dropFirst()))
                if !folders.contains(own) { folders.append(own) }
            }
            for folder in folders.sorted(by: { $0.path.count > $1.path.count }) { rmdir(folder.path) }
            made = []
        }
    }
}
