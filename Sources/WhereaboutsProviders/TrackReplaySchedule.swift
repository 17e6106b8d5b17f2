import WhereaboutsCore

/// When each fix of a ``Track`` is delivered during a replay, and what it looks like then. Pure: the replay
/// provider owns the timer and the clock.
///
/// **Timing.** Point *i* of a pass is due `(t[i] - t[0]) / speed` after the pass starts, so the recorded gaps are
/// kept, divided by the speed factor (2 plays twice as fast as recorded). Offsets are microseconds and strictly
/// increasing: a point that rounding would put no later than its predecessor is moved 1 µs after it.
///
/// **Looping.** Playback loops forever, so a demo keeps producing fixes. After the last point comes a gap of
/// 1 s of track time (divided by the speed, at least 1 µs), then the first point again. Pass *n* starts at
/// `n × loopDuration`.
///
/// **Delivered fixes.** They are marked simulated, from provider ``ProviderKind/replay``, described as
/// "Replay of <name>", and stamped with the playback time (start + offset), so timestamps increase
/// monotonically across loops. Speed and its accuracy are multiplied by the speed factor, so that they agree
/// with how fast the replayed positions move.
public struct ReplaySchedule: Sendable {
    /// The longest pass supported: 100 years, far beyond any real recording, and far from overflowing the
    /// microsecond arithmetic.
    public static let maximumLoopDuration: Duration = .seconds(100 * 365 * 86_400)

    /// The track played.
    public let track: Track
    /// The speed factor: 1 is real time, 2 twice as fast.
    public let speed: Double
    /// The time from the start of one pass to the start of the next.
    public let loopDuration: Duration
    /// Each point's offset from the start of its pass, in microseconds.
    private let offsets: [Int64]

    /// A schedule playing `track` at `speed` times real time.
    ///
    /// - Throws: ``TrackError/invalidSpeed(_:)`` unless `speed` is finite and above zero;
    ///   ``TrackError/playbackTooLong(fileName:speed:)`` when a pass would exceed ``maximumLoopDuration``.
    public init(track: Track, speed: Double = 1) throws(TrackError) {
        guard speed.isFinite, speed > 0 else { throw .invalidSpeed(speed) }
        let start = track.fixes[0].timestamp
        let limit = Double(Self.maximumLoopDuration.wholeMicroseconds)
        let wrapGap = max(1, (1_000_000 / speed).rounded())
        var offsets: [Int64] = []
        offsets.reserveCapacity(track.fixes.count)
        for fix in track.fixes {
            let scaled = (Double(fix.timestamp.microseconds - start.microseconds) / speed).rounded()
            guard scaled + wrapGap <= limit else { throw .playbackTooLong(fileName: track.name, speed: speed) }
            offsets.append(max(Int64(scaled), (offsets.last ?? -1) + 1))
        }
        self.track = track
        self.speed = speed
        self.offsets = offsets
        self.loopDuration = .microseconds(offsets[offsets.count - 1] + Int64(wrapGap))
    }

    /// When point `index` of pass `loop` (both from 0) is due, counted from the start of playback.
    ///
    /// Saturates rather than overflowing after some 292 years of play, where `Duration.wholeNanoseconds`, which
    /// `WallTime` arithmetic uses, saturates too.
    public func offset(at index: Int, loop: Int) -> Duration {
        precondition(track.fixes.indices.contains(index) && loop >= 0, "no point \(index) in loop \(loop)")
        let limit = Int64.max / 1_000
        let (passes, overflow) = loopDuration.wholeMicroseconds.multipliedReportingOverflow(by: Int64(loop))
        let (total, overflow2) = passes.addingReportingOverflow(offsets[index])
        return .microseconds(overflow || overflow2 ? limit : min(total, limit))
    }

    /// The fix to deliver for point `index` of pass `loop`, when playback started at `startedAt`.
    public func fix(at index: Int, loop: Int, startedAt: WallTime) -> Fix {
        var fix = track.fixes[index]
        fix.timestamp = startedAt.advanced(by: offset(at: index, loop: loop))
        fix.provider = .replay
        fix.isSimulated = true
        fix.description = "Replay of \(track.name)"
        fix.speed = fix.speed.map { $0 * speed }
        fix.speedAccuracy = fix.speedAccuracy.map { $0 * speed }
        return fix
    }

    /// The point that should be showing `elapsed` after playback started: the last one due at or before then.
    ///
    /// A provider that wakes late (after a suspend, say) delivers this one and skips the ones it missed; the next
    /// point is `index + 1`, or 0 of `loop + 1` after the last. A negative `elapsed` gives the first point.
    public func latestDue(at elapsed: Duration) -> (index: Int, loop: Int) {
        let microseconds = max(0, elapsed.wholeMicroseconds)
        let period = loopDuration.wholeMicroseconds
        let loop = microseconds / period
        let within = microseconds % period
        var low = 0
        var high = offsets.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if offsets[middle] <= within { low = middle } else { high = middle - 1 }
        }
        return (low, Int(loop))
    }
}
