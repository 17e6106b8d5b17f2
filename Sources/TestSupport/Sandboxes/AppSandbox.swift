import Foundation

/// Flatpak's sandbox as far as the service and the desktop portal can see it: a process under `bwrap` with a
/// `/.flatpak-info` naming its app at the root of its file system. (The scope `flatpak run` puts it in is a
/// ``UnitCgroup`` named by ``UnitCgroup/flatpakScopeName(appID:number:)``.)
public enum FlatpakSandbox {
    /// bwrap's arguments, up to the command, for a sandbox seeing the system's `/usr` (and the merged `/bin`, `/lib`,
    /// `/lib64`, `/sbin` links), `/etc`, its own `/proc`, `/dev` and `/tmp`, a process namespace of its own,
    /// `infoFile` at `/.flatpak-info`, `shared` bound read-write and `readOnly` read-only at their own paths (the
    /// buses' folders, the test scripts); it dies with its parent.
    public static func bwrapArguments(infoFile: URL, shared: [URL], readOnly: [URL] = []) -> [String] {
        var arguments = ["--ro-bind", "/usr", "/usr"]
        for name in ["bin", "lib", "lib64", "sbin"] {
            let path = "/" + name
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
                arguments += ["--symlink", target, path]
            } else if FileManager.default.fileExists(atPath: path) {
                arguments += ["--ro-bind", path, path]
            }
        }
        arguments += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for folder in shared { arguments += ["--bind", folder.path, folder.path] }
        for folder in readOnly { arguments += ["--ro-bind", folder.path, folder.path] }
        return arguments + [
            "--ro-bind", infoFile.path, "/.flatpak-info", "--unshare-pid", "--die-with-parent", "--chdir", "/",
        ]
    }

    /// `command` in such a sandbox, run as `user`.
    public static func command(
        _ command: [String], asUser user: String, infoFile: URL, shared: [URL], readOnly: [URL] = []
    ) throws -> [String] {
        try Unprivileged.prefix(asUser: user) + [try Executables.find("bwrap").path]
            + bwrapArguments(infoFile: infoFile, shared: shared, readOnly: readOnly) + command
    }

    /// A `/.flatpak-info` for `appID` in `directory`, with the one key the portal reads, `[Application] name`.
    public static func infoFile(_ appID: String, in directory: URL) throws -> URL {
        let file = directory.appendingPathComponent("flatpak-info-\(appID)")
        try "[Application]\nname=\(appID)\n".write(to: file, atomically: true, encoding: .utf8)
        return file
    }
}
