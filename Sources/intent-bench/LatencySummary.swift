/// Percentiles of submit → terminal latencies, in milliseconds.
struct LatencySummary: Sendable {
    var count: Int
    var p50: Double
    var p95: Double
    var p99: Double
    var max: Double

    /// Nearest-rank percentiles of `seconds`; nil when there is no sample.
    init?(seconds: [Double]) {
        guard !seconds.isEmpty else { return nil }
        let sorted = seconds.sorted()
        func rank(_ fraction: Double) -> Double {
            let index = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
            return sorted[Swift.max(0, Swift.min(sorted.count - 1, index))] * 1000
        }
        count = sorted.count
        p50 = rank(0.50)
        p95 = rank(0.95)
        p99 = rank(0.99)
        max = sorted[sorted.count - 1] * 1000
    }
}
