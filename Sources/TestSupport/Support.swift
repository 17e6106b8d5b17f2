import Foundation

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

    /// A build product by name, or `$WHEREABOUTS_BIN_DIR/name` when that variable is set (to test an installation).
    public static func product(_ name: String) throws -> URL {
        if let directory = ProcessInfo.processInfo.environment["WHEREABOUTS_BIN_DIR"] {
            return URL(fileURLWithPath: directory).appendingPathComponent(name)
        }
        let url = products.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw TestEnvironmentError("build product \(name) not found in \(products.path); run swift build first")
        }
        return url
    }
}

/// A missing or broken test component. Tests fail with it; they never skip.
public struct TestEnvironmentError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

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
    /// Polls `condition` every 10 ms until it holds, or throws after `timeout` seconds.
    public static func until(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
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
