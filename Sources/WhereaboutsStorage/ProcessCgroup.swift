#if canImport(Glibc)
    import Glibc
#endif

/// Reads the cgroups of a process, `/proc/PID/cgroup`, from which its sandbox is told
/// (`AppIdentityParsing.caller(cgroup:securityLabel:uid:)`).
///
/// The file is world-readable and lives in the kernel's memory: reading it costs a few microseconds and never
/// waits on a disk, so the bus thread may read it.
public enum ProcessCgroup {
    /// The most bytes read: a process is in one cgroup per hierarchy, each path at most 4 KiB.
    static let limit = 64 << 10

    /// Why a process's cgroups could not be read.
    public struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The process.
        public var pid: UInt32
        /// True when no process `pid` exists any more.
        public var gone: Bool
        /// The `errno` of the failure.
        public var code: Int32

        /// "process N is gone" or what the system said.
        public var description: String {
            gone
                ? "process \(pid) is gone" : "cannot read /proc/\(pid)/cgroup: \(String(cString: strerror(code)))"
        }
    }

    /// The text of `/proc/<pid>/cgroup`, under `procRoot` (`/proc`; a test may give another folder).
    public static func read(pid: UInt32, procRoot: String = "/proc") -> Result<String, ReadError> {
        let fd = open("\(procRoot)/\(pid)/cgroup", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return .failure(failure(pid, errno)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(failure(pid, errno))
            }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        // An exiting process's file reads empty: it is gone as far as its identity goes.
        guard !bytes.isEmpty else { return .failure(ReadError(pid: pid, gone: true, code: ESRCH)) }
        // A byte that is not UTF-8 becomes U+FFFD, which no name the parser believes may hold.
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    /// The error for `code`: ENOENT and ESRCH mean the process exited.
    private static func failure(_ pid: UInt32, _ code: Int32) -> ReadError {
        ReadError(pid: pid, gone: code == ENOENT || code == ESRCH, code: code)
    }
}
