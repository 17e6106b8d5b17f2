extension Duration {
    /// Whole milliseconds, saturating.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? (seconds < 0 ? .min : .max) : scaled + attoseconds / 1_000_000_000_000_000
    }
}
