import WhereaboutsCore

/// The regions the apps watch and their pending events (``RegionMonitor``), kept in a ``DurableFile`` named
/// `regions` next to the grants, readable by the service's user only. Nothing in it leaves the machine.
///
/// A file that cannot be read or parsed is moved aside and no region is watched: the apps see their regions gone
/// from `ListRegions` and add them again, rather than being told of a place they never were.
public struct RegionStoreFile: Sendable {
    /// The largest file read: the regions of many apps at their longest lines, with room.
    public static let sizeLimit = 32 << 20

    public let file: DurableFile
    private let writer: BackgroundWriter<RegionMonitor>

    /// The file that goes with the grants file `grantsPath`; a failed save is told to `saveFailed`, on the
    /// writer's thread.
    public init(besideGrantsAt grantsPath: String, saveFailed: @escaping @Sendable (String) -> Void) {
        let file = DurableFile(named: "regions", besideFileAt: grantsPath)
        self.file = file
        writer = BackgroundWriter(
            write: { monitor in try file.write(RegionFile.serialize(monitor)) },
            finished: { _, failure in
                if let failure { saveFailed(failure) }
            })
    }

    /// The saved regions, without those expired; `log` receives a line when the file was corrupt or unreadable.
    public func load(now: WallTime, log: (String) -> Void) -> RegionMonitor {
        file.load(
            limit: Self.sizeLimit, now: now, label: "regions", fallback: "watching no region",
            missing: RegionMonitor(), unusable: RegionMonitor(), log: log
        ) { text in
            Result { () throws(RegionFileError) in try RegionFile.parse(text, now: now) }
                .mapError { DurableFile.LoadProblem("\(file.path): \($0)") }
        }
    }

    /// Waits until the regions handed over are written, for a process about to end.
    public func flush() { writer.flush() }

    /// Hands `monitor` to the writer thread, which serialises it and saves it durably; returns at once.
    public func save(_ monitor: RegionMonitor) { writer.submit(monitor) }
}
