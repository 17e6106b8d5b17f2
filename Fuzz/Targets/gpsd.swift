import CGPSD
import Glibc
import WhereaboutsCore

@testable import GPSD

/// gpsd's JSON reports as the provider reads them: the input is sent by a stand-in gpsd on a loopback socket, and
/// the shim's `wb_gps_read` (its own line framing and report parser) turns each line into a flat fix that
/// `GPSDFix` converts. Every input gets a fresh connection, so no state leaks from one input to the next.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGPSDReports(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = StandInGPSD.shared
    var error: UnsafePointer<CChar>? = nil
    var opened = wb_gps_open("127.0.0.1", StandInGPSD.shared.port, &error)
    // Loopback connections made this fast are now and then refused for a moment; a few tries get through.
    for _ in 0..<100 where opened == nil {
        usleep(1000)
        opened = wb_gps_open("127.0.0.1", StandInGPSD.shared.port, &error)
    }
    guard let gps = opened else {
        fatalError("cannot connect to the stand-in gpsd: \(error.map { String(cString: $0) } ?? "?")")
    }
    let peer = accept(StandInGPSD.shared.listener, nil, nil)
    precondition(peer >= 0, "accept failed")
    // One write: a second small one would wait for the first one's delayed acknowledgement (Nagle).
    let report = Array(UnsafeBufferPointer(start: data, count: size)) + [UInt8(ascii: "\n")]
    report.withUnsafeBytes { StandInGPSD.send($0, to: peer) }

    // On loopback the bytes are with the client once the write returns: read until nothing is left.
    var raw = wb_gps_fix()
    while wb_gps_wait(gps, 0) == 1 {
        let status = wb_gps_read(gps, &raw)
        if status < 0 { break }
        if status == 1, let fix = GPSDFix.fix(from: raw, receivedAt: WallTime(seconds: 1_700_000_000)) {
            checkFix(fix)
        }
    }
    // The stand-in resets the connection rather than closing it in order, so that hundreds of thousands of inputs
    // leave no loopback ports in TIME_WAIT.
    var reset = linger(l_onoff: 1, l_linger: 0)
    setsockopt(peer, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
    close(peer)
    wb_gps_close(gps)
    return 0
}

/// A listening socket on loopback standing in for gpsd.
private struct StandInGPSD: Sendable {
    static let shared = StandInGPSD()

    let listener: CInt
    let port: String

    private init() {
        // Closing the shim writes to a connection the stand-in has reset, as the daemon may meet a gpsd gone away;
        // the daemon ignores SIGPIPE too.
        signal(SIGPIPE, SIG_IGN)
        let listener = socket(AF_INET, CInt(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, socketAddress, &length) == 0
            }
        }
        precondition(bound, "cannot listen on loopback")
        self.listener = listener
        port = String(UInt16(bigEndian: address.sin_port))
    }

    static func send(_ bytes: UnsafeRawBufferPointer, to peer: CInt) {
        var offset = 0
        while offset < bytes.count {
            let written = write(peer, bytes.baseAddress! + offset, bytes.count - offset)
            precondition(written > 0, "write to the client failed")
            offset += written
        }
    }
}
