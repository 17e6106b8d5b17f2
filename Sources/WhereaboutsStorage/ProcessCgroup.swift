#if canImport(Glibc)
    import Glibc
#endif

/// What a process's `/proc/PID` says of it that tells its app: its cgroups (`cgroup`), from which its sandbox is
/// told (`AppIdentityParsing.caller(cgroup:securityLabel:uid:)`), and its effective user, which is the user the bus
/// names for its connection unless the pid was reused.
///
/// Both live in the kernel's memory: reading them costs a few microseconds and never waits on a disk, so the bus
/// thread may read them. They are read through one open `/proc/PID` folder, so they describe one process even if it
/// exits and its pid is given to another meanwhile.
public struct ProcessCgroup: Sendable, Equatable {
    /// The text of `/proc/PID/cgroup`.
    public var cgroup: String
    /// The effective user id (the one the kernel gave the bus when the process connected): the owner of the
    /// `/proc/PID` folder, which the kernel keeps as the process's effective user whether or not it may dump core
    /// (the files in the folder, `status` among them, are root's for a process that may not; the folder is not, so
    /// that `stat` tells the user, as procps reads it). As the reader's user namespace sees it: a user it does not
    /// map reads as the overflow user, 65534, as in `status`.
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
        /// The file under `/proc/PID` (`cgroup`); empty for the folder itself.
        public var file: String
        /// True when no process `pid` exists any more.
        public var gone: Bool
        /// The `errno` of the failure (0 for a file that does not read as the kernel writes it).
        public var code: Int32

        /// "process N is gone" or what went wrong.
        public var description: String {
            if gone { return "process \(pid) is gone" }
            let path = file.isEmpty ? "/proc/\(pid)" : "/proc/\(pid)/\(file)"
            if code == 0 { return "\(path) does not read as the kernel writes it" }
            return "cannot read \(path): \(String(cString: strerror(code)))"
        }
    }

    /// The cgroups and effective user of process `pid`, under `procRoot` (`/proc`; a test may give another folder).
    /// The user is taken before the cgroups are read: a process reaped in between has a folder of root's, and then
    /// its cgroups read as gone.
    public static func read(pid: UInt32, procRoot: String = "/proc") -> Result<ProcessCgroup, ReadError> {
        let folder = open("\(procRoot)/\(pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return .failure(failure(pid, "", errno)) }
        defer { close(folder) }
        var owner = stat()
        guard fstat(folder, &owner) == 0 else { return .failure(failure(pid, "", errno)) }
        return readFile(pid, "cgroup", in: folder).map {
            // A byte that is not UTF-8 becomes U+FFFD, which no name the parser believes may hold.
            ProcessCgroup(cgroup: String(decoding: $0, as: UTF8.self), effectiveUser: owner.st_uid)
        }
    }

    /// The user id a user namespace shows for a user it does not map (`/proc/sys/kernel/overflowuid`'s default).
    public static let overflowUser: UInt32 = 65534

    /// The bytes of `file` in `folder`, process `pid`'s; an empty file is a process gone (an exiting process's files
    /// read empty).
    private static func readFile(_ pid: UInt32, _ file: String, in folder: Int32) -> Result<[UInt8], ReadError> {
        let fd = openat(folder, file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
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
