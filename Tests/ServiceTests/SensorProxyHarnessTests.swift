import Foundation
import Glibc
import TestSupport
import Testing

/// The real iio-sensor-proxy with its fake compass on a private bus, as the compass users of the package's bus
/// policy see it: a heading only while claimed, claims dropped with their connection, and nobody else let in.
@Suite("iio-sensor-proxy harness: the real daemon and its fake compass", .serialized)
struct SensorProxyHarnessTests {
    /// A bus with the package's policy (plus `compassUsers`) and iio-sensor-proxy; both stop when the test ends.
    final class Environment {
        let bus: PrivateBus
        let proxy: SensorProxyHarness

        init(compassUsers: [String] = []) throws {
            bus = try PrivateBus(extraPolicy: SensorProxyHarness.busPolicy(compassUsers: compassUsers))
            do {
                proxy = try SensorProxyHarness(bus: bus)
            } catch {
                bus.stop()
                throw error
            }
        }

        deinit {
            proxy.stop()
            bus.stop()
        }
    }

    /// The headings a ``SensorProxyHarness/claimCompass(asUser:headings:)`` run printed.
    static func headings(_ claim: CommandResult) -> [Double] {
        claim.output.split(whereSeparator: \.isNewline).compactMap { line in
            line.hasPrefix("heading ") ? Double(line.dropFirst("heading ".count)) : nil
        }
    }

    @Test func theHeadingTurnsWhileClaimedAndStopsWhenTheClaimerLeaves() throws {
        let environment = try Environment()
        let proxy = environment.proxy
        #expect(try proxy.hasCompass())
        let claim = try proxy.claimCompass(headings: 2)
        #expect(claim.status == 0, "\(claim.output)\n\(proxy.process.log)")
        #expect(Self.headings(claim) == [10, 20], "\(claim.output)")

        // The claimer left without ReleaseCompass: the claim went with its connection, and the heading stays.
        let left = try proxy.heading()
        usleep(2_500_000)
        #expect(try proxy.heading() == left, "\(proxy.process.log)")
        #expect(left >= 20, "\(proxy.process.log)")

        // The next claim goes on from there.
        let again = try proxy.claimCompass(headings: 1)
        #expect(Self.headings(again) == [left + 10], "\(again.output)")
    }

    @Test func onlyTheCompassUsersOfThePolicyMayClaim() throws {
        let packageOnly = try Environment()
        let refused = try packageOnly.proxy.claimCompass(asUser: "nobody", headings: 1)
        #expect(refused.status == 2, "\(refused.output)")
        #expect(refused.output.contains("refused org.freedesktop.DBus.Error.AccessDenied"), "\(refused.output)")

        let widened = try Environment(compassUsers: ["nobody"])
        let claim = try widened.proxy.claimCompass(asUser: "nobody", headings: 1)
        #expect(claim.status == 0 && Self.headings(claim) == [10], "\(claim.output)")
    }
}
