/// Order statistics for the benchmark figures.
public enum Percentile {
    /// The `p`-th percentile (0...100) of `values` by the nearest-rank method; nil when empty.
    public static func of(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
