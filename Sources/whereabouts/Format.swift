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
        if let heading = position.trueHeading {
            text += "  heading \(fixed(heading, 0))° true"
        } else if let heading = position.magneticHeading {
            text += "  heading \(fixed(heading, 0))° magnetic"
        }
        text += "  \(isoTime(position.timestamp * 1000))"
        if let provider = position.provider { text += "  \(provider)" }
        if position.isSimulated { text += " (simulated)" }
        if position.isStale { text += " (last known)" }
        return text
    }

    /// One JSON object in the position format, unknown values as null.
    static func json(_ position: Position) -> String {
        object([
            ("latitude", number(position.latitude)), ("longitude", number(position.longitude)),
            ("altitude", number(position.altitude)), ("horizontalAccuracy", number(position.horizontalAccuracy)),
            ("verticalAccuracy", number(position.verticalAccuracy)), ("course", number(position.course)),
            ("speed", number(position.speed)), ("timestamp", "\(position.timestamp)"),
            ("magneticHeading", number(position.magneticHeading)), ("trueHeading", number(position.trueHeading)),
            ("headingAccuracy", number(position.headingAccuracy)),
        ])
    }

    /// One `region list` line: id, state, centre, watched radius, then the time of the deciding fix when there is
    /// one and the options that are not the defaults, separated by tabs.
    static func line(_ status: RegionStatus) -> String {
        let region = status.region
        var fields = [
            region.id, status.state.rawValue, "\(fixed(region.latitude, 6)), \(fixed(region.longitude, 6))",
            "\(fixed(region.radius, 1)) m",
        ]
        if let since = status.since { fields.append("since \(isoTime(milliseconds: since))") }
        if !region.notifyOnEntry { fields.append("no entry") }
        if !region.notifyOnExit { fields.append("no exit") }
        if let dwell = region.dwell { fields.append("dwell \(dwell.components.seconds) s") }
        if let expires = region.expires { fields.append("expires \(isoTime(milliseconds: expires))") }
        return fields.joined(separator: "\t")
    }

    /// One `region list --json` object: times of fixes in milliseconds, dwell in seconds and the expiry in Unix
    /// seconds (as `region add` takes them), null when not set.
    static func json(_ status: RegionStatus) -> String {
        let region = status.region
        return object([
            ("id", string(region.id)), ("state", string(status.state.rawValue)),
            ("latitude", number(region.latitude)), ("longitude", number(region.longitude)),
            ("radius", number(region.radius)), ("since", status.since.map { "\($0)" } ?? "null"),
            ("notifyOnEntry", "\(region.notifyOnEntry)"), ("notifyOnExit", "\(region.notifyOnExit)"),
            ("dwell", region.dwell.map { "\($0.components.seconds)" } ?? "null"),
            ("expires", region.expires.map { "\($0 / 1000)" } ?? "null"),
        ])
    }

    /// The `region watch` lines of a notice: for a change the id, state, time, position with its accuracy (`-`
    /// when there is none) and `pending` for a kept one; for a removal one line per id: id, `removed`, reason.
    /// Fields are separated by tabs.
    static func lines(_ notice: RegionNotice) -> [String] {
        switch notice {
        case .changed(let event):
            var fields = [event.id, event.state.rawValue, isoTime(milliseconds: event.timestamp)]
            if event.latitude.isFinite && event.longitude.isFinite {
                let accuracy = event.accuracy.isFinite ? " ±\(fixed(event.accuracy, 1)) m" : ""
                fields.append("\(fixed(event.latitude, 6)), \(fixed(event.longitude, 6))\(accuracy)")
            } else {
                fields.append("-")
            }
            if event.wasPending { fields.append("pending") }
            return [fields.joined(separator: "\t")]
        case .removed(let ids, let reason):
            return ids.map { "\($0)\tremoved\t\(reason)" }
        }
    }

    /// The `region watch --json` objects of a notice: for a change id, state, timestamp (ms), latitude,
    /// longitude, accuracy (null when unknown) and pending; for a removal one per id: id, state `removed`, reason.
    static func json(_ notice: RegionNotice) -> [String] {
        switch notice {
        case .changed(let event):
            return [
                object([
                    ("id", string(event.id)), ("state", string(event.state.rawValue)),
                    ("timestamp", "\(event.timestamp)"), ("latitude", number(event.latitude)),
                    ("longitude", number(event.longitude)), ("accuracy", number(event.accuracy)),
                    ("pending", "\(event.wasPending)"),
                ])
            ]
        case .removed(let ids, let reason):
            return ids.map {
                object([("id", string($0)), ("state", string("removed")), ("reason", string(reason))])
            }
        }
    }

    /// `satellites`: how many are in view and used, then a line a satellite.
    static func lines(_ sky: [SatelliteInView]) -> [String] {
        func degrees(_ value: Double?) -> String { value.map { "\(fixed($0, 0))°" } ?? "?" }
        return ["\(sky.count) in view, \(sky.filter(\.usedInFix).count) used"]
            + sky.map { satellite in
                "\(satellite.constellation) \(satellite.id)\tel \(degrees(satellite.elevation))\taz \(degrees(satellite.azimuth))\t"
                    + (satellite.signalStrength.map { "\(fixed($0, 0)) dB-Hz" } ?? "not tracked")
                    + (satellite.usedInFix ? "\tused" : "")
            }
    }

    /// `satellites --json`: one array of the sky's satellites, unknown values null.
    static func json(_ sky: [SatelliteInView]) -> String {
        "["
            + sky.map { satellite in
                object([
                    ("constellation", string(satellite.constellation)), ("id", "\(satellite.id)"),
                    ("elevation", number(satellite.elevation)), ("azimuth", number(satellite.azimuth)),
                    ("cn0", number(satellite.signalStrength)), ("used", satellite.usedInFix ? "true" : "false"),
                ])
            }.joined(separator: ",") + "]"
    }

    /// A JSON object of these keys and already encoded values, in this order.
    static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { "\(string($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A JSON number, or null for an unknown or non-finite value.
    static func number(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "null" }
        return "\(value)"
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    static func string(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
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
            text += modemLines(provider)
            text += compassLine(provider)
        }
        text +=
            "apps using location: \(status.activeApps.isEmpty ? "none" : status.activeApps.joined(separator: ", "))\n"
        if status.isWhereabouts { text += regionLine(status) }
        if let identity = status.appIdentity { text += identityLine(identity) }
        return text
    }

    /// Who the service takes the CLI for: `this process: flatpak:org.example.App (verified by its sandbox)`.
    static func identityLine(_ identity: AppIdentity) -> String {
        let how =
            switch identity.source {
            case .flatpak: "verified by its Flatpak sandbox"
            case .snap: "verified by its snap confinement"
            case .portal: "named by the desktop portal"
            case .claimed: "claimed, not verified"
            }
        let hint = identity.desktopHint.map { "; its unit is named after \($0).desktop" } ?? ""
        return "this process: \(identity.description) (\(how)\(hint))\n"
    }

    /// What the watched regions cost: how many, the level they ask for and the providers that level starts.
    static func regionLine(_ status: ServiceStatus) -> String {
        guard status.watchedRegions > 0 else { return "regions: none watched\n" }
        let started = status.providers.filter { $0.level <= status.regionLevel }.map(\.kind)
        return "regions: \(status.watchedRegions) watched, asking for level \(status.regionLevel)"
            + " (providers: \(started.isEmpty ? "none" : started.joined(separator: ", ")))\n"
    }

    /// The compass's line: whether iio-sensor-proxy has one, whether it is claimed, and its heading.
    static func compassLine(_ provider: ServiceStatus.Provider) -> String {
        guard provider.kind == "compass", let hasCompass = provider.flags["has-compass"] else { return "" }
        guard hasCompass else {
            return
                "  compass: none (iio-sensor-proxy \(provider.flags["service"] == true ? "has none" : "not running"))\n"
        }
        let claimed = provider.flags["claimed"] == true ? "claimed" : "not claimed"
        return "  compass: \(claimed)\(provider.texts["heading"].map { ", heading \($0)° magnetic" } ?? "")\n"
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
        if let disputed = provider.counts["disputed-answers"], disputed > 0 {
            text += "  not served: \(disputed) answer\(disputed == 1 ? "" : "s") a better-placed source contradicted\n"
        }
        if let time = provider.times["last-lookup"], let outcome = provider.texts["last-outcome"] {
            text += "  last lookup: \(isoTime(Int64(time) * 1000)), \(outcome)"
            if let source = provider.texts["last-source"] { text += " from \(source)" }
            if let message = provider.texts["last-message"] { text += " (\(message))" }
            text += "\n"
        }
        return text
    }

    /// The modem providers' lines: each modem (its `modem NAME` detail) with its state and the sources set up on it,
    /// and each modem's serving cell (`cell PATH`).
    static func modemLines(_ provider: ServiceStatus.Provider) -> String {
        provider.texts.keys.filter { $0.hasPrefix("modem ") || $0.hasPrefix("cell ") }.sorted().map { key in
            "  \(key): \(provider.texts[key] ?? "")\n"
        }.joined()
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

    /// RFC 3339 UTC with milliseconds, from milliseconds since the epoch (clamped to 146 000 years either side).
    static func isoTime(milliseconds: Int64) -> String {
        let limit = Int64.max / 2000
        return isoTime(min(max(milliseconds, -limit), limit) * 1000)
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
