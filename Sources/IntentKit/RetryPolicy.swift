/// Thrown by `resolve`, `confirm` or `handle` for a failure that may pass (a
/// service that is down, a lock that is held): the intent is tried again later,
/// with backoff, up to its type's `RetryPolicy`. Throw an `IntentFailure` instead
/// to fail at once.
public struct TransientFailure: Error, Sendable, CustomStringConvertible {
    /// What failed, in words: logged with each retry, shown as the intent's progress while it waits, and kept in the
    /// `retriesExhausted` failure's message.
    public var reason: String

    /// A failure that may pass, for `reason`.
    public init(_ reason: String) {
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}

/// An error that can tell whether it may pass by itself: a database that is
/// busy, full or failing to write (`DatabaseError` conforms). Thrown from
/// `resolve`, `confirm` or `handle` while `isRetryable`, it retries the intent
/// with backoff for as long as it lasts, without counting against the type's
/// `RetryPolicy`: the intent waits for the storage instead of failing.
public protocol RetryableError: Error {
    /// Whether the error may pass by itself, so that the intent waits and is tried again.
    var isRetryable: Bool { get }
}

/// How often and how late an intent type is retried after a `TransientFailure`.
public struct RetryPolicy: Sendable, Hashable {
    /// Retries after the first attempt; then the intent fails with `retriesExhausted`.
    public var maxRetries: Int
    /// The delay before the first retry, in seconds; each further retry doubles it.
    public var initialDelay: Double
    /// No retry waits longer than this.
    public var maxDelay: Double

    /// A policy of `maxRetries` retries (none when negative), the first after `initialDelay` seconds (1 by default), none
    /// waiting longer than `maxDelay` (300 by default: five minutes). The first delay is at least a millisecond, and
    /// `maxDelay` is never shorter than it.
    public init(maxRetries: Int, initialDelay: Double = 1, maxDelay: Double = 300) {
        self.maxRetries = max(0, maxRetries)
        self.initialDelay = max(0.001, initialDelay)
        self.maxDelay = max(self.initialDelay, maxDelay)
    }

    /// Five retries, from one second to five minutes apart.
    public static let standard = RetryPolicy(maxRetries: 5)

    /// The delay before retry number `retry` (0 for the first): exponential, with
    /// jitter between half and all of it so that retries of many intents spread out.
    public func delay(beforeRetry retry: Int, jitter: Double = Double.random(in: 0.5...1)) -> Double {
        let exponential = initialDelay * Double(1 << min(max(0, retry), 30))
        return min(maxDelay, exponential) * min(1, max(0, jitter))
    }
}
