/// NetworkManager's `NMMetered` values that mean the connection is metered: `NM_METERED_YES` (1) and
/// `NM_METERED_GUESS_YES` (3).
public enum NetworkMetering {
    /// Whether NetworkManager's `Metered` value `value` calls the connection metered.
    public static func isMetered(_ value: UInt32) -> Bool { value == 1 || value == 3 }
}
