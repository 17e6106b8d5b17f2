/// Decides which satellite fixes are contributed to the positioning service with the scan heard there
/// (`/v2/geosubmit`), and makes the report.
///
/// A fix is submitted when
/// 1. it was measured, by gpsd or an NMEA source: not replayed, not injected (``Fix/isSimulated``), and not
///    from Wi-Fi or IP positioning (which would feed the service its own answers);
/// 2. its position is finite and in range and its accuracy at most ``maximumAccuracy`` (100 m, GeoClue's
///    threshold; beaconDB drops reports above 250 m);
/// 3. the scan has at least ``SubmissionItem/minimumAccessPoints`` access points that can be submitted
///    (Ichnaea needs two Wi-Fi networks in a report);
/// 4. the scan was made within ``maximumScanSkew`` of the fix, so the access points were heard where the fix
///    was (beaconDB drops access points heard more than 30 s from the position);
/// 5. at least ``minimumInterval`` (60 s, GeoClue's) has passed since the last submission offered.
///
/// Access point ages in the report are made relative to the fix's time, as Ichnaea reads them.
public struct SubmissionPacer: Sendable {
    /// The largest accuracy submitted, in metres.
    public static let maximumAccuracy = 100.0
    /// The shortest time between submissions.
    public static let minimumInterval: Duration = .seconds(60)
    /// The longest time between the fix and the scan.
    public static let maximumScanSkew: Duration = .seconds(15)

    private var lastSubmission: MonotonicTime?

    /// A pacer that has submitted nothing.
    public init() {}

    /// The report to submit for `fix` and `usable` (``AccessPointSelection/usable(_:)`` of a scan made at
    /// `scannedAt`), or nil when the rule says no; a report counts as submitted at `now`.
    public mutating func submission(
        for fix: Fix, scan usable: [AccessPoint], scannedAt: WallTime, now: MonotonicTime
    ) -> SubmissionItem? {
        guard SubmissionPacer.isMeasured(fix), PositionCache.isValidPosition(fix.latitude, fix.longitude),
            fix.horizontalAccuracy.isFinite, fix.horizontalAccuracy >= 0,
            fix.horizontalAccuracy <= SubmissionPacer.maximumAccuracy
        else { return nil }
        let skew = fix.timestamp.since(scannedAt)
        guard skew <= SubmissionPacer.maximumScanSkew, skew >= .zero - SubmissionPacer.maximumScanSkew else {
            return nil
        }
        if let lastSubmission, now - lastSubmission < SubmissionPacer.minimumInterval { return nil }
        let accessPoints = usable.map { accessPoint in
            var relative = accessPoint
            relative.age = (accessPoint.age ?? .zero) + skew
            return relative
        }
        let item = SubmissionItem(
            timestamp: fix.timestamp, latitude: fix.latitude, longitude: fix.longitude,
            accuracy: fix.horizontalAccuracy, altitude: fix.altitude, speed: fix.speed, heading: fix.course,
            accessPoints: accessPoints)
        guard item.submittableAccessPoints.count >= SubmissionItem.minimumAccessPoints else { return nil }
        lastSubmission = now
        return item
    }

    /// True for fixes a receiver measured.
    private static func isMeasured(_ fix: Fix) -> Bool {
        guard !fix.isSimulated else { return false }
        switch fix.provider {
        case .gpsd, .nmea, .modemGNSS: return true
        case .static, .replay, .wifi, .ip, .compass, .cell, .cdma: return false
        }
    }
}
