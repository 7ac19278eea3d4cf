/// Percentiles of submit → terminal latencies, in milliseconds.
struct LatencySummary: Sendable {
    var count: Int
    var p50: Double
    var p95: Double
    var p99: Double
    var max: Double

    /// Percentiles worked out elsewhere (the C ceiling prints its own).
    init(count: Int, p50: Double, p95: Double, p99: Double, max: Double) {
        (self.count, self.p50, self.p95, self.p99, self.max) = (count, p50, p95, p99, max)
    }

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

/// An end-to-end latency in three legs, each from the status store's timestamps and the recorder's write.
struct LatencySplit: Sendable {
    /// submitted_at → started_at: the broker's routing and queueing, the worker's admission and any wait for a slot.
    var toStart: LatencySummary
    /// started_at → finished_at: resolution, confirmation and the handler, with the commit of its effects.
    var running: LatencySummary
    /// finished_at → the recorder's write: the outcome's publish, routing and the recorder's batching.
    var toStore: LatencySummary
}
