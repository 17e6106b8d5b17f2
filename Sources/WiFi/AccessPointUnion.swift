import WhereaboutsCore

/// Access points from several interfaces, each BSSID once: a radio that sees an access point better wins.
struct AccessPointUnion {
    private(set) var accessPoints: [AccessPoint] = []
    private var index: [BSSID: Int] = [:]

    mutating func add(_ points: [AccessPoint]) {
        for point in points {
            guard let existing = index[point.bssid] else {
                index[point.bssid] = accessPoints.count
                accessPoints.append(point)
                continue
            }
            let kept = accessPoints[existing]
            if point.signal > kept.signal
                || (point.signal == kept.signal
                    && (point.age ?? .seconds(Int64.max)) < (kept.age ?? .seconds(Int64.max)))
            {
                accessPoints[existing] = point
            }
        }
    }
}
