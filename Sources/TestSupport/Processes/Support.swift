import Foundation
import Glibc
import TestBasics

/// Where the project's files and build products are.
public enum ProjectPaths {
    /// The package root (the folder holding `Package.swift`).
    public static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }()

    /// The folder with the build products of the running test binary (`.build/<triple>/<configuration>`).
    public static let products: URL = {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var url = executable.deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("whereaboutsd").path) { return url }
            url.deleteLastPathComponent()
        }
        return executable.deletingLastPathComponent()
    }()

    /// A build product by name, as a copy every user may run (``shared``), or `$WHEREABOUTS_BIN_DIR/name` when that
    /// variable is set (to test an installation).
    public static func product(_ name: String) throws -> URL {
        if let directory = ProcessInfo.processInfo.environment["WHEREABOUTS_BIN_DIR"] {
            return URL(fileURLWithPath: directory).appendingPathComponent(name)
        }
        let url = products.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw TestEnvironmentError("build product \(name) not found in \(products.path); run swift build first")
        }
        return try shared.copy(url)
    }

    /// `Tests/StandIns` (the programs that play a system component the tests cannot run: ModemManager,
    /// wpa_supplicant, iio-sensor-proxy, an Ichnaea server), as a copy every user may read (``shared``).
    public static let standIns = sharedCopy("Tests/StandIns")

    /// `Tests/Clients` (the apps the tests and benchmarks run as other users, python-dbus on a connection of their
    /// own), as a copy every user may read (``shared``).
    public static let clients = sharedCopy("Tests/Clients")

    /// The copy of the project's folder `path` every user may read; a test process that cannot write its temporary
    /// folder stops here, saying so.
    private static func sharedCopy(_ path: String) -> URL {
        do {
            return try shared.copy(root.appendingPathComponent(path))
        } catch {
            fatalError("cannot copy \(path) where every user may read it: \(error)")
        }
    }

    /// Where the tests keep what they run as other users (`nobody`, the service's user): the checkout may be where
    /// only root can read it (a clone in `/root`, mode 0700 on Debian), so those files are copied, once per test
    /// process, to a folder under the temporary folder that everyone may read, removed when the process exits.
    private static let shared = SharedCopies()
}

/// Copies of the project's files in a folder every user may read and traverse (``ProjectPaths/product(_:)``,
/// ``ProjectPaths/standIns``, ``ProjectPaths/clients``), each made at its first use.
private final class SharedCopies: @unchecked Sendable {
    private let lock = NSLock()
    private var folder: URL?
    private var copies: [URL: URL] = [:]

    /// The copy of `source` (a file, or a folder copied whole), which every user may read, and run where the owner
    /// may.
    func copy(_ source: URL) throws -> URL {
        try lock.withLock {
            if let made = copies[source] { return made }
            let folder = try self.folder ?? makeFolder()
            let copy = folder.appendingPathComponent("\(copies.count)-\(source.lastPathComponent)")
            try Self.copyTree(source, to: copy)
            try Self.open(copy)
            copies[source] = copy
            return copy
        }
    }

    private func makeFolder() throws -> URL {
        let made = try TemporaryDirectory.make(prefix: "whereabouts-shared")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: made.path)
        folder = made
        sharedFolderToRemove = made.path
        atexit { if let path = sharedFolderToRemove { try? FileManager.default.removeItem(atPath: path) } }
        return made
    }

    /// Copies `source`, a file or a folder and everything below it, to `destination`.
    private static func copyTree(_ source: URL, to destination: URL) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: source.path)
        guard attributes[.type] as? FileAttributeType == .typeDirectory else {
            return try copyFile(source, to: destination, mode: mode_t((attributes[.posixPermissions] as? Int) ?? 0o644))
        }
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) {
            try copyTree(source.appendingPathComponent(name), to: destination.appendingPathComponent(name))
        }
    }

    /// Copies one file through a descriptor no child process inherits (`O_CLOEXEC`): the suites run in parallel,
    /// and a process another test spawned while the copy was open for writing would keep it so for its whole life,
    /// so that running the copy (the daemon, the CLI) failed with `ETXTBSY`, "text file busy".
    private static func copyFile(_ source: URL, to destination: URL, mode: mode_t) throws {
        let bytes = try Data(contentsOf: source)
        let descriptor = Glibc.open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw TestEnvironmentError("cannot create \(destination.path): errno \(errno)") }
        defer { close(descriptor) }
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else {
                    throw TestEnvironmentError("cannot write \(destination.path): errno \(errno)")
                }
                offset += written
            }
        }
    }

    /// Lets every user read `url` and everything below it, and traverse or run what its owner may.
    private static func open(_ url: URL) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let mode = (attributes[.posixPermissions] as? Int) ?? 0
        let runnable = mode & 0o100 != 0
        try FileManager.default.setAttributes(
            [.posixPermissions: runnable ? 0o755 : 0o644], ofItemAtPath: url.path)
        guard attributes[.type] as? FileAttributeType == .typeDirectory else { return }
        for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
            try open(url.appendingPathComponent(name))
        }
    }
}

/// The folder of ``SharedCopies``, for the process's exit to remove.
nonisolated(unsafe) private var sharedFolderToRemove: String?

/// Finds programs the tests need; a missing program is a failure, not a skip.
public enum Executables {
    /// The absolute path of `name`, searched in PATH and the system folders.
    public static func find(_ name: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        for folder in folders {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw TestEnvironmentError("\(name) is not installed; run the test command from the README, which installs it")
    }
}

/// Temporary folders for test fixtures.
public enum TemporaryDirectory {
    /// Creates a fresh folder under the system's temporary folder.
    public static func make(prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Polling waits with a deadline.
public enum Wait {
    /// Polls `condition` every 10 ms until it holds, or throws after `timeout` seconds on the monotonic clock (a
    /// wall clock set while a test waits must not end its wait).
    public static func until(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if try condition() { return }
            usleep(10_000)
        }
        throw TestEnvironmentError("timed out after \(timeout) s waiting for \(what)")
    }
}

extension URL {
    /// Creates an empty file at this URL if none exists, and returns the URL.
    public func creatingFile() throws -> URL {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw TestEnvironmentError("cannot create \(path)")
            }
        }
        return self
    }
}

/// Runs `body`, which blocks (starting a daemon, waiting for a command), on a thread of its own and returns what it
/// returns: a test that waits for it holds neither the bus thread nor one of the few threads Swift's tasks share, so
/// the other tests running meanwhile go on.
public func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
