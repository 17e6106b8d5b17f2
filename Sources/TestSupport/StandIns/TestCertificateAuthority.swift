import Foundation
import TestBasics

/// A certificate authority of its own and a server certificate it signed, made with `/usr/bin/openssl` in a fresh
/// temporary folder, for HTTPS test servers and the clients that trust them.
///
/// The keys are ECDSA P-256 and the certificates valid for a week from now. The server certificate names every
/// one of `serverNames` as a subject alternative name (an IPv4 address as such, anything else as a DNS name) and
/// is for server authentication only.
public struct TestCertificateAuthority: Sendable {
    /// The folder holding every file below; ``remove()`` deletes it.
    public let directory: URL
    /// The authority's certificate (PEM): what a client is told to trust.
    public let certificateFile: URL
    /// The server's certificate (PEM), signed by the authority.
    public let serverCertificateFile: URL
    /// The server's private key (PEM, unencrypted).
    public let serverKeyFile: URL
    /// The names the server certificate is valid for.
    public let serverNames: [String]

    /// Makes the authority and a server certificate for `serverNames` (by default the loopback names).
    public static func make(serverNames: [String] = ["localhost", "127.0.0.1"]) throws -> TestCertificateAuthority {
        guard !serverNames.isEmpty else { throw TestEnvironmentError("a server certificate needs a name") }
        let openssl = URL(fileURLWithPath: "/usr/bin/openssl")
        guard FileManager.default.isExecutableFile(atPath: openssl.path) else {
            throw TestEnvironmentError("\(openssl.path) is not installed; install the openssl package")
        }
        let directory = try TemporaryDirectory.make(prefix: "whereabouts-ca")
        do {
            let names = serverNames.map { isIPv4Address($0) ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ", ")
            let configuration = directory.appendingPathComponent("openssl.cnf")
            try """
            [req]
            distinguished_name = authority_name
            prompt = no

            [authority_name]
            CN = Whereabouts Test CA

            [authority]
            basicConstraints = critical, CA:TRUE
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash

            [server]
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = \(names)
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid

            """.write(to: configuration, atomically: true, encoding: .utf8)
            let file = { (name: String) in directory.appendingPathComponent(name).path }
            let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            try run(
                openssl,
                ["req", "-x509", "-config", configuration.path, "-extensions", "authority", "-days", "7"] + key
                    + ["-keyout", file("ca.key"), "-out", file("ca.pem")], in: directory)
            try run(
                openssl,
                ["req", "-new", "-config", configuration.path, "-subj", "/CN=\(serverNames[0])"] + key
                    + ["-keyout", file("server.key"), "-out", file("server.csr")], in: directory)
            try run(
                openssl,
                [
                    "x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
                    "-set_serial", "0x\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16))",
                    "-days", "7", "-extfile", configuration.path, "-extensions", "server", "-out", file("server.pem"),
                ],
                in: directory)
            return TestCertificateAuthority(
                directory: directory, certificateFile: directory.appendingPathComponent("ca.pem"),
                serverCertificateFile: directory.appendingPathComponent("server.pem"),
                serverKeyFile: directory.appendingPathComponent("server.key"), serverNames: serverNames)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Deletes the folder with the keys and certificates.
    public func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    private static func run(_ program: URL, _ arguments: [String], in directory: URL) throws {
        let log = directory.appendingPathComponent("openssl-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = try ChildProcess(program, arguments, logFile: log)
        do {
            try process.wait(timeout: 60)
        } catch {
            process.stop(grace: 1)
            throw TestEnvironmentError("openssl \(arguments.joined(separator: " ")) did not finish:\n\(process.log)")
        }
        guard process.exitCode == 0 else {
            throw TestEnvironmentError("openssl \(arguments.joined(separator: " ")) failed:\n\(process.log)")
        }
    }

    private static func isIPv4Address(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in UInt8(part) != nil && part.allSatisfy(\.isASCII) }
    }
}
