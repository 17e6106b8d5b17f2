import WhereaboutsCore

/// Groups the sentences of one receiver epoch into one ``Fix``.
///
/// GeoClue emits one update per sentence, so a receiver sending GGA and RMC gives two updates per second, one
/// of them without speed. The assembler emits one fix per epoch instead. Shared by the replay source and the
/// serial, socket and TCP NMEA sources.
///
/// **Epochs.** GGA, RMC and GST carry a UTC time; sentences with the same time form one epoch. GSA and VTG carry
/// none and join the epoch that is open when they arrive.
///
/// **When a fix is emitted.** An epoch is closed, and its fix returned, as soon as it holds both a GGA and an
/// RMC, so a live source need not wait for the next second; or when a sentence with a different time arrives;
/// or by ``finish()``. Sentences that arrive after their epoch closed early (a GSA, or a GST of the same time,
/// which u-blox receivers send after GGA) are carried into the next epoch. There they supply DOPs, error
/// estimates and speed only where that epoch brings none of its own, so they are at most one epoch old.
///
/// **Validity.** An epoch gives a fix only when it has a GGA or RMC with a position, its GGA (if any) has a
/// quality above 0, its RMC (if any) is not void (status `V` or mode `N`), and no GSA received within it
/// reports fix mode 1. A sentence repeated while its epoch is open (another talker's GGA, say) replaces the
/// earlier one; a GGA or RMC repeated after the epoch closed is ignored. A carried GSA never vetoes (it belongs
/// to the previous epoch); one reporting mode 1 is simply not used. A GSA reporting a 2D fix drops the
/// altitude, which the receiver did not measure.
///
/// **Position and accuracy.** The position comes from GGA, else RMC. Horizontal accuracy comes from GST's
/// latitude and longitude σ, else from HDOP (GGA, else GSA) with the UERE for the fix quality, else from an
/// assumed HDOP of 2; vertical accuracy from GST's altitude σ, else from GSA's VDOP, else it is unknown. All are
/// 95% figures. Zero σ or DOP, which some receivers send for "unknown", counts as absent.
///
/// **Altitude.** GGA's altitude is above mean sea level; the ellipsoidal altitude is that plus the geoid
/// separation when the sentence gives one.
///
/// **Timestamp.** The date comes from the epoch's RMC. Without one the assembler dates the time of day to the
/// instant nearest (within 12 hours) the previous fix's timestamp, or before any fix, nearest `fallbackDate`;
/// this also carries GGA-only streams across midnight. With neither, the epoch is dropped.
///
/// **Speed and course.** From RMC, else from VTG.
///
/// **Fix type and DOPs.** GGA's quality 2 is a differential fix, 4 RTK fixed, 5 RTK float; otherwise the GSA's
/// mode says 2D or 3D, and without a GSA a GGA with an altitude is 3D, as gpsd reads it. HDOP comes from GGA, else
/// GSA; VDOP and PDOP from GSA.
public struct NMEAFixAssembler: Sendable {
    /// The provider kind stamped on every fix: ``ProviderKind/nmea`` for a live receiver, ``ProviderKind/replay``
    /// for a recording.
    public let provider: ProviderKind
    /// Stamped on every fix: true when the sentences are played back rather than live.
    public let isSimulated: Bool
    /// An instant near the fixes, for dating epochs before any RMC date is known: the wall clock's now for a live
    /// receiver. The epoch gets the time of day nearest this instant, so a receiver's 23:59:59 read at 00:00:01
    /// wall time lands on the previous day. Nil means such epochs are dropped until an RMC brings a date.
    public var fallbackDate: WallTime?

    private var epoch: Epoch?
    private var carried = Supplements()
    private var lastTimestamp: WallTime?

    /// An assembler stamping its fixes with `provider` and `isSimulated`.
    public init(provider: ProviderKind, isSimulated: Bool = false, fallbackDate: WallTime? = nil) {
        self.provider = provider
        self.isSimulated = isSimulated
        self.fallbackDate = fallbackDate
    }

    /// Adds one decoded sentence; returns the fix of the epoch it completed, if that epoch is valid.
    ///
    /// At most one fix results per sentence: a sentence either completes its own epoch (GGA plus RMC) or, by
    /// opening a new one, completes the previous epoch, never both.
    public mutating func add(_ sentence: NMEASentence) -> Fix? {
        switch sentence.content {
        case .gga(let gga):
            guard let time = gga.time else { return nil }
            return add(at: time, { $0.gga = gga }, late: nil)
        case .rmc(let rmc):
            guard let time = rmc.time else { return nil }
            return add(at: time, { $0.rmc = rmc }, late: nil)
        case .gst(let gst):
            guard let time = gst.time else { return nil }
            return add(at: time, { $0.own.gst = gst }, late: { $0.gst = gst })
        case .gsa(let gsa):
            addUntimed({ $0.gsa = gsa })
            return nil
        case .vtg(let vtg):
            addUntimed({ $0.vtg = vtg })
            return nil
        case .gsv, .unsupported:
            return nil
        }
    }

    /// Decodes one line and adds it; see ``NMEASentence/init(parsing:)`` and ``add(_:)``.
    public mutating func add(line: some Collection<UInt8>) throws(NMEAError) -> Fix? {
        add(try NMEASentence(parsing: line))
    }

    /// Closes the open epoch at the end of the input; returns its fix if it is valid and was not yet emitted.
    public mutating func finish() -> Fix? {
        closeEpoch()
    }

    /// The sentences of one epoch.
    private struct Epoch {
        var time: NMEATimeOfDay
        var gga: NMEASentence.GGA?
        var rmc: NMEASentence.RMC?
        /// GSA, GST and VTG received while this epoch was open.
        var own = Supplements()
        /// Sentences that arrived after the previous epoch closed.
        var carried: Supplements
        var isClosed = false
    }

    /// The sentences that refine a fix rather than define it.
    private struct Supplements {
        var gsa: NMEASentence.GSA?
        var gst: NMEASentence.GST?
        var vtg: NMEASentence.VTG?
    }

    private mutating func add(
        at time: NMEATimeOfDay, _ apply: (inout Epoch) -> Void, late: ((inout Supplements) -> Void)?
    ) -> Fix? {
        if var current = epoch, current.time == time {
            if current.isClosed {
                late?(&carried)
                return nil
            }
            apply(&current)
            epoch = current
            return current.gga != nil && current.rmc != nil ? closeEpoch() : nil
        }
        let finished = closeEpoch()
        var next = Epoch(time: time, carried: carried)
        carried = Supplements()
        apply(&next)
        epoch = next
        return finished
    }

    private mutating func addUntimed(_ apply: (inout Supplements) -> Void) {
        if var current = epoch, !current.isClosed {
            apply(&current.own)
            epoch = current
        } else {
            apply(&carried)
        }
    }

    /// Marks the open epoch closed and returns its fix, if any.
    private mutating func closeEpoch() -> Fix? {
        guard var current = epoch, !current.isClosed else { return nil }
        current.isClosed = true
        epoch = current
        guard let fix = makeFix(current) else { return nil }
        lastTimestamp = fix.timestamp
        return fix
    }

    private func makeFix(_ epoch: Epoch) -> Fix? {
        if epoch.own.gsa?.fixMode == 1 || epoch.gga?.quality == 0 || epoch.rmc?.isValid == false { return nil }
        guard let position = epoch.gga?.position ?? epoch.rmc?.position,
            let timestamp = timestamp(of: epoch)
        else { return nil }

        let gsa = epoch.own.gsa ?? epoch.carried.gsa.flatMap { $0.fixMode >= 2 ? $0 : nil }
        let gst = epoch.own.gst ?? epoch.carried.gst
        let vtg = (epoch.own.vtg ?? epoch.carried.vtg).flatMap { $0.isValid ? $0 : nil }
        let uere =
            [2, 4, 5].contains(epoch.gga?.quality) ? AccuracyModel.differentialUERE : AccuracyModel.autonomousUERE
        var parts: [String] = []
        if epoch.gga != nil { parts.append("GGA") }
        if epoch.rmc != nil { parts.append("RMC") }

        let horizontalAccuracy: Double
        var usedGST = false
        if let sigmaLatitude = positive(gst?.sigmaLatitude), let sigmaLongitude = positive(gst?.sigmaLongitude) {
            horizontalAccuracy = AccuracyModel.horizontal(sigmaLatitude: sigmaLatitude, sigmaLongitude: sigmaLongitude)
            usedGST = true
        } else if let hdop = positive(epoch.gga?.hdop) ?? positive(gsa?.hdop) {
            horizontalAccuracy = AccuracyModel.horizontal(hdop: hdop, uere: uere)
        } else {
            horizontalAccuracy = AccuracyModel.horizontal(hdop: AccuracyModel.assumedHDOP, uere: uere)
        }

        let altitude = gsa?.fixMode == 2 ? nil : epoch.gga?.altitude
        var verticalAccuracy: Double?
        if altitude != nil {
            if let sigma = positive(gst?.sigmaAltitude) {
                verticalAccuracy = AccuracyModel.vertical(sigma: sigma)
                usedGST = true
            } else if let vdop = positive(gsa?.vdop) {
                verticalAccuracy = AccuracyModel.vertical(vdop: vdop, uere: uere)
            }
        }
        if gsa != nil { parts.append("GSA") }
        if usedGST { parts.append("GST") }

        var speed = epoch.rmc?.speed
        var course = epoch.rmc?.course
        if let vtg, speed == nil || course == nil {
            speed = speed ?? vtg.speed
            course = course ?? vtg.course
            parts.append("VTG")
        }

        return Fix(
            latitude: position.latitude, longitude: position.longitude, horizontalAccuracy: horizontalAccuracy,
            altitude: altitude,
            ellipsoidalAltitude: altitude.flatMap { altitude in epoch.gga?.geoidSeparation.map { altitude + $0 } },
            verticalAccuracy: verticalAccuracy, speed: speed, course: course,
            fixType: fixType(epoch.gga, gsa, hasAltitude: altitude != nil),
            hdop: positive(epoch.gga?.hdop) ?? positive(gsa?.hdop), vdop: positive(gsa?.vdop),
            pdop: positive(gsa?.pdop), timestamp: timestamp, provider: provider,
            description: "NMEA " + parts.joined(separator: "+"), isSimulated: isSimulated)
    }

    /// The fix type GGA's quality says, else GSA's mode, else GGA's altitude.
    private func fixType(_ gga: NMEASentence.GGA?, _ gsa: NMEASentence.GSA?, hasAltitude: Bool) -> FixType {
        switch (gga?.quality, gsa?.fixMode) {
        case (2, _): .differential
        case (4, _): .rtkFixed
        case (5, _): .rtkFloat
        case (_, 2): .twoDimensional
        case (_, 3): .threeDimensional
        case (.some, _): hasAltitude ? .threeDimensional : .twoDimensional
        default: .none
        }
    }

    /// The epoch's instant: RMC's date plus the time of day, else the time of day nearest the reference.
    private func timestamp(of epoch: Epoch) -> WallTime? {
        let timeOfDay = epoch.time.microsecondsSinceMidnight
        if let date = epoch.rmc?.date {
            return WallTime(microseconds: date.midnight.microseconds + timeOfDay)
        }
        guard let reference = lastTimestamp ?? fallbackDate else { return nil }
        let day = CivilCalendar.microsecondsPerDay
        let referenceDay =
            reference.microseconds >= 0 ? reference.microseconds / day : (reference.microseconds + 1) / day - 1
        var candidate = referenceDay * day + timeOfDay
        if candidate - reference.microseconds > day / 2 {
            candidate -= day
        } else if reference.microseconds - candidate > day / 2 {
            candidate += day
        }
        return WallTime(microseconds: candidate)
    }
}

/// The value when it is positive; receivers send 0 for an unknown DOP or σ.
private func positive(_ value: Double?) -> Double? {
    guard let value, value > 0 else { return nil }
    return value
}
