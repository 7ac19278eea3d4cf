/// How long to wait before the next attempt to reach the broker: doubling from
/// `initial` up to `maximum`, with ±20 % jitter so a fleet does not reconnect in step.
public struct ReconnectBackoff: Sendable {
    /// The wait before the next attempt.
    public private(set) var delay: Double
    private let initial: Double
    private let maximum: Double

    public init(initial: Double = 0.2, maximum: Double = 10) {
        self.initial = initial
        self.maximum = maximum
        delay = initial
    }

    /// The wait for this failed attempt; the next one will be longer.
    public mutating func next() -> Double {
        defer { delay = min(delay * 2, maximum) * Double.random(in: 0.8...1.2) }
        return delay
    }

    /// After a success: start again from `initial`.
    public mutating func reset() {
        delay = initial
    }
}
