import CGPSD
@testable import GPSD
import Glibc
import WhereaboutsCore

/// gpsd's JSON reports as the provider reads them: the input is sent by a stand-in gpsd on a loopback socket, and
/// the shim's `wb_gps_read` (libgps's own buffering and JSON unpacking) turns each line into a flat fix that
/// `GPSDFix` converts. Every input gets a fresh connection, so no state leaks from one input to the next.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGPSDReports(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var error: UnsafePointer<CChar>? = nil
    guard let gps = wb_gps_open("127.0.0.1", StandInGPSD.shared.port, &error) else {
        fatalError("cannot connect to the stand-in gpsd: \(error.map { String(cString: $0) } ?? "?")")
    }
    let peer = accept(StandInGPSD.shared.listener, nil, nil)
    precondition(peer >= 0, "accept failed")
    // One write: a second small one would wait for the first one's delayed acknowledgement (Nagle).
    let report = Array(UnsafeBufferPointer(start: data, count: size)) + [UInt8(ascii: "\n")]
    report.withUnsafeBytes { StandInGPSD.send($0, to: peer) }
    shutdown(peer, CInt(SHUT_WR))

    var raw = wb_gps_fix()
    while true {
        let status = wb_gps_read(gps, &raw)
        if status < 0 { break }
        if status == 1, let fix = GPSDFix.fix(from: raw, receivedAt: WallTime(seconds: 1_700_000_000)) {
            checkFix(fix)
        }
    }
    wb_gps_close(gps)
    close(peer)
    return 0
}

/// A listening socket on loopback standing in for gpsd.
private struct StandInGPSD: Sendable {
    static let shared = StandInGPSD()

    let listener: CInt
    let port: String

    private init() {
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
