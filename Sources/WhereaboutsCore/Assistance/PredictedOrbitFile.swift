/// A predicted-orbit file (XTRA) as downloaded for a modem's receiver: the servers asked, where it came from, when,
/// until when it is used (``PredictedOrbitValidity``) and its bytes, which are handed to the modem as they are.
public struct PredictedOrbitFile: Sendable, Equatable {
    /// The largest file downloaded or kept (XTRA files are about 30 to 250 KiB).
    public static let maximumSize = 1 << 20

    /// The servers it is for, in the order they are asked: the file's key.
    public var servers: [String]
    /// The URL that answered.
    public var source: String
    /// When it was downloaded; with ``servers``, what tells two files apart.
    public var downloaded: WallTime
    /// When it stops being used.
    public var expires: WallTime
    /// The file.
    public var data: [UInt8]

    /// Makes a file's record.
    public init(servers: [String], source: String, downloaded: WallTime, expires: WallTime, data: [UInt8]) {
        self.servers = servers
        self.source = source
        self.downloaded = downloaded
        self.expires = expires
        self.data = data
    }

    /// Whether it is used at `now`: from its download until its expiry, which is never more than
    /// ``PredictedOrbitValidity/maximumValidity`` after the download (a kept file whose times say otherwise, as when
    /// the clock was wrong at the download, is not used).
    public func isValid(at now: WallTime) -> Bool {
        downloaded <= now && now < expires && expires.since(downloaded) <= PredictedOrbitValidity.maximumValidity
    }
}
