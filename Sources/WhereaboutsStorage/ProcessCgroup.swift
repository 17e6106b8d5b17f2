#if canImport(Glibc)
    import Glibc
#endif

/// What a process's `/proc/PID` files say of it that tells its app: its cgroups (`cgroup`), from which its sandbox
/// is told (`AppIdentityParsing.caller(cgroup:securityLabel:uid:)`), and its effective user (`status`), which is
/// the user the bus names for its connection unless the pid was reused.
///
/// Both files are world-readable and live in the kernel's memory: reading them costs a few microseconds and never
/// waits on a disk, so the bus thread may read them.
public struct ProcessCgroup: Sendable, Equatable {
    /// The text of `/proc/PID/cgroup`.
    public var cgroup: String
    /// The effective user id, the second of the `Uid:` line of `/proc/PID/status` (the one the kernel gave the bus
    /// when the process connected), as the reader's user namespace sees it: a user it does not map reads as the
    /// overflow user, 65534.
    public var effectiveUser: UInt32

    /// The facts given.
    public init(cgroup: String, effectiveUser: UInt32) {
        self.cgroup = cgroup
        self.effectiveUser = effectiveUser
    }

    /// The most bytes read of a file: a process is in one cgroup per hierarchy, each path at most 4 KiB.
    static let limit = 64 << 10

    /// Why a process's files could not be read.
    public struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The process.
        public var pid: UInt32
        /// The file under `/proc/PID`: `cgroup` or `status`.
        public var file: String
        /// True when no process `pid` exists any more.
        public var gone: Bool
        /// The `errno` of the failure (0 for a file that does not read as the kernel writes it).
        public var code: Int32

        /// "process N is gone" or what went wrong.
        public var description: String {
            if gone { return "process \(pid) is gone" }
            if code == 0 { return "/proc/\(pid)/\(file) does not read as the kernel writes it" }
            return "cannot read /proc/\(pid)/\(file): \(String(cString: strerror(code)))"
        }
    }

    /// The cgroups and effective user of process `pid`, under `procRoot` (`/proc`; a test may give another folder).
    public static func read(pid: UInt32, procRoot: String = "/proc") -> Result<ProcessCgroup, ReadError> {
        let cgroup: [UInt8]
        let status: [UInt8]
        switch (readFile(pid, "cgroup", procRoot), readFile(pid, "status", procRoot)) {
        case (.failure(let error), _), (_, .failure(let error)): return .failure(error)
        case (.success(let first), .success(let second)): (cgroup, status) = (first, second)
        }
        guard let effectiveUser = effectiveUserField(in: status) else {
            return .failure(ReadError(pid: pid, file: "status", gone: false, code: 0))
        }
        // A byte that is not UTF-8 becomes U+FFFD, which no name the parser believes may hold.
        return .success(ProcessCgroup(cgroup: String(decoding: cgroup, as: UTF8.self), effectiveUser: effectiveUser))
    }

    /// The second number of the `Uid:` line (real, effective, saved, file system).
    private static func effectiveUserField(in status: [UInt8]) -> UInt32? {
        let separators: Set<UInt8> = [UInt8(ascii: "\t"), UInt8(ascii: " ")]
        for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: "Uid:".utf8) {
            let fields = line.dropFirst(4).split(whereSeparator: separators.contains)
            return fields.count == 4 ? UInt32(String(decoding: fields[1], as: UTF8.self)) : nil
        }
        return nil
    }

    /// The user id a user namespace shows for a user it does not map (`/proc/sys/kernel/overflowuid`'s default).
    public static let overflowUser: UInt32 = 65534

    /// The bytes of `/proc/<pid>/<file>`; an empty file is a process gone (an exiting process's files read empty).
    private static func readFile(_ pid: UInt32, _ file: String, _ procRoot: String) -> Result<[UInt8], ReadError> {
        let fd = open("\(procRoot)/\(pid)/\(file)", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return .failure(failure(pid, file, errno)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(failure(pid, file, errno))
            }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        guard !bytes.isEmpty else { return .failure(ReadError(pid: pid, file: file, gone: true, code: ESRCH)) }
        return .success(bytes)
    }

    /// The error for `code`: ENOENT and ESRCH mean the process exited.
    private static func failure(_ pid: UInt32, _ file: String, _ code: Int32) -> ReadError {
        ReadError(pid: pid, file: file, gone: code == ENOENT || code == ESRCH, code: code)
    }
}
