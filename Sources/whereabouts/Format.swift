import Whereabouts

/// How fixes are printed.
enum Format {
    /// One human-readable line.
    static func line(_ position: Position) -> String {
        var text =
            "\(fixed(position.latitude, 6)), \(fixed(position.longitude, 6)) ±\(fixed(position.horizontalAccuracy, 1)) m"
        if let altitude = position.altitude { text += "  alt \(fixed(altitude, 1)) m" }
        if let speed = position.speed { text += "  \(fixed(speed, 1)) m/s" }
        if let course = position.course { text += "  course \(fixed(course, 0))°" }
        text += "  \(isoTime(position.timestamp * 1000))"
        if let provider = position.provider { text += "  \(provider)" }
        if position.isSimulated { text += " (simulated)" }
        if position.isStale { text += " (last known)" }
        return text
    }

    /// One JSON object in the position format, unknown values as null.
    static func json(_ position: Position) -> String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return "\(value)"
        }
        let fields: [(String, String)] = [
            ("latitude", number(position.latitude)), ("longitude", number(position.longitude)),
            ("altitude", number(position.altitude)), ("horizontalAccuracy", number(position.horizontalAccuracy)),
            ("verticalAccuracy", number(position.verticalAccuracy)), ("course", number(position.course)),
            ("speed", number(position.speed)), ("timestamp", "\(position.timestamp)"),
            ("magneticHeading", number(position.magneticHeading)), ("trueHeading", number(position.trueHeading)),
            ("headingAccuracy", number(position.headingAccuracy)),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The `status` report.
    static func status(_ status: ServiceStatus) -> String {
        var text = "location services: \(status.servicesEnabled ? "on" : "off")\n"
        text += "service: \(status.isWhereabouts ? "Whereabouts" : "GeoClue 2 (without Whereabouts' interfaces)")\n"
        text += "available accuracy level: \(status.availableLevel)\n"
        text += "in use: \(status.inUse ? "yes" : "no")\n"
        for provider in status.providers {
            text += "provider \(provider.kind): \(provider.available ? "available" : "unavailable"), "
            text += "\(provider.running ? "running" : "idle"), started for level \(provider.level) and above\n"
            text += networkLines(provider)
        }
        text +=
            "apps using location: \(status.activeApps.isEmpty ? "none" : status.activeApps.joined(separator: ", "))\n"
        return text
    }

    /// The network providers' lines: backend, why unavailable, what was sent and the last lookup.
    static func networkLines(_ provider: ServiceStatus.Provider) -> String {
        var text = ""
        if let backend = provider.texts["backend"] {
            text += "  Wi-Fi scans: \(backend == "none" ? "none (no wpa_supplicant or NetworkManager)" : backend)\n"
        }
        if !provider.available, let reason = provider.texts["reason"] { text += "  unavailable: \(reason)\n" }
        if let requests = provider.counts["requests"] {
            text += "  sent: \(requests == 0 ? "nothing" : "\(requests) lookup\(requests == 1 ? "" : "s")")"
            if let submissions = provider.counts["submissions"], submissions > 0 {
                text += ", \(submissions) contribution\(submissions == 1 ? "" : "s")"
            }
            text += "\n"
        }
        if let answers = provider.counts["cached-answers"], let learned = provider.counts["learned-places"] {
            text +=
                "  known on this machine: \(answers) cached answer\(answers == 1 ? "" : "s"), \(learned) learned place\(learned == 1 ? "" : "s")\n"
        }
        if let time = provider.times["last-lookup"], let outcome = provider.texts["last-outcome"] {
            text += "  last lookup: \(isoTime(Int64(time) * 1000)), \(outcome)"
            if let source = provider.texts["last-source"] { text += " from \(source)" }
            if let message = provider.texts["last-message"] { text += " (\(message))" }
            text += "\n"
        }
        return text
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (abs(value) * scale).rounded()
        let whole = Int(rounded / scale)
        let fraction = Int(rounded.truncatingRemainder(dividingBy: scale))
        let sign = value < 0 && rounded != 0 ? "-" : ""
        guard digits > 0 else { return "\(sign)\(whole)" }
        let padded = String(repeating: "0", count: max(0, digits - String(fraction).count)) + String(fraction)
        return "\(sign)\(whole).\(padded)"
    }

    /// RFC 3339 UTC with milliseconds, from microseconds since the epoch.
    static func isoTime(_ microseconds: Int64) -> String {
        let seconds = microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
        let millis = (microseconds - seconds * 1_000_000) / 1000
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = seconds - days * 86400
        // Howard Hinnant's civil-from-days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return
            "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)).\(ms)Z"
    }
}
