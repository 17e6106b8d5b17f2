#if canImport(Glibc)
    import Glibc
#endif

/// What a process's `/proc/PID` files say of it that tells its app: its cgroups (`cgroup`), from which its sandbox
/// is told (`AppIdentityParsing.caller(cgroup:securityLabel:uid:)`), and its effective user, which is the user the
/// bus names for its connection unless the pid was reused.
///
/// The files live in the kernel's memory: reading them costs a few microseconds and never waits on a disk, so the
/// bus thread may read them. They are read through one open `/proc/PID` folder, so they describe one process even if
/// it exits and its pid is given to another meanwhile (the files of a process gone read as gone).
public struct ProcessCgroup: Sendable, Equatable {
    /// The text of `/proc/PID/cgroup`.
    public var cgroup: String
    /// The effective user id (the one the kernel gave the bus when the process connected), as far as telling a
    /// reused pid needs it, as the reader's user namespace sees it (a user it does not map reads as the overflow
    /// user, 65534): the owner of `/proc/PID` when that is the connection's user (not root) or the overflow user,
    /// otherwise the second of the `Uid:` line of `/proc/PID/status`.
    ///
    /// The folder's owner is the effective user of a process that may dump core; of one that may not (a setuid
    /// program), it is root, or the root of the user namespace the process was started in, so that a folder of
    /// root's says nothing and `status` is read. (A pid reused by a process that may not dump core, in a user
    /// namespace whose root is the connection's user, passes as that user's: such a namespace and its processes are
    /// that user's own.)
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
        /// The file under `/proc/PID`: `cgroup` or `status`; empty for the folder itself.
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

    /// The cgroups and effective user of process `pid`, whose bus connection is `user`'s, under `procRoot` (`/proc`;
    /// a test may give another folder). `status`, which the kernel writes out in full (some sixty lines) for each
    /// read, is read only when the folder's owner does not settle the user (``effectiveUser``).
    public static func read(pid: UInt32, connectedAs user: UInt32, procRoot: String = "/proc")
        -> Result<ProcessCgroup, ReadError>
    {
        let folder = open("\(procRoot)/\(pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return .failure(failure(pid, "", errno)) }
        defer { close(folder) }
        let cgroup: [UInt8]
        switch readFile(pid, "cgroup", in: folder) {
        case .failure(let error): return .failure(error)
        case .success(let bytes): cgroup = bytes
        }
        var owner = stat()
        guard fstat(folder, &owner) == 0 else { return .failure(failure(pid, "", errno)) }
        let effectiveUser: UInt32
        if (owner.st_uid == user && user != 0) || owner.st_uid == overflowUser {
            effectiveUser = owner.st_uid
        } else {
            switch readFile(pid, "status", in: folder) {
            case .failure(let error): return .failure(error)
            case .success(let status):
                guard let field = effectiveUserField(in: status) else {
                    return .failure(ReadError(pid: pid, file: "status", gone: false, code: 0))
                }
                effectiveUser = field
            }
        }
        // A byte that is not UTF-8 becomes U+FFFD, which no name the parser believes may hold.
        return .success(ProcessCgroup(cgroup: String(decoding: cgroup, as: UTF8.self), effectiveUser: effectiveUser))
    }

    /// The second number of the `Uid:` line (real, effective, saved, file system).
    private static func effectiveUserField(in status: [UInt8]) -> UInt32? {
        let separators: Set<UInt8> = [UInt8(ascii: "\t"), UInt8(ascii: " ")]
        var lineStart = status.startIndex
        while lineStart < status.endIndex {
            let lineEnd = status[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? status.endIndex
            let line = status[lineStart..<lineEnd]
            if line.starts(with: "Uid:".utf8) {
                let fields = line.dropFirst(4).split(whereSeparator: separators.contains)
                return fields.count == 4 ? UInt32(String(decoding: fields[1], as: UTF8.self)) : nil
            }
            lineStart = lineEnd + 1
        }
        return nil
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
