import Glibc

/// A Unix stream socket listening at `path`, with room for `backlog` connections waiting; the caller closes it.
public func listeningUnixSocket(at path: String, backlog: Int32 = 4) throws -> Int32 {
    let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard listener >= 0, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
        if listener >= 0 { close(listener) }
        throw TestEnvironmentError("cannot make a socket at \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        buffer.copyBytes(from: bytes)
        buffer[bytes.count] = 0
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard bound == 0, listen(listener, backlog) == 0 else {
        let failure = errno
        close(listener)
        throw TestEnvironmentError("cannot listen on \(path): errno \(failure)")
    }
    return listener
}
