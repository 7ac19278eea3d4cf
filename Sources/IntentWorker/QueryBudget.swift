import Foundation
import Synchronization

/// How much of the recorder's time each user's costly remote status queries (`StatusQuery.isCostly`) may take. The
/// recorder answers them on the thread that records every event, so one user asking for `list --limit 1000` over and
/// over would slow recording and everyone else's reads. Each user has a balance of answering time that fills at `share`
/// seconds a second up to `burst` seconds; an answer's time is taken from it once it is made. A user whose balance has
/// run out is told at once that the recorder is busy with their queries, and when to ask again, without the query
/// being run. Times are on a monotonic clock (seconds of uptime), given by the caller.
final class QueryBudget: Sendable {
    /// The refusal a user past their budget gets: the tools exit 69 (unavailable: try again later), the gateway answers 503.
    struct Exceeded: Error, CustomStringConvertible {
        var user: String
        var retryAfter: Double
        var description: String {
            "the recorder is busy with \(user.isEmpty ? "anonymous" : "\(user)'s") status queries: try again in \(String(format: "%.1f", retryAfter)) s"
        }
    }

    /// Seconds of answering a second, per user.
    let share: Double
    /// The most a user's balance holds, in seconds.
    let burst: Double
    /// Users followed at most: past it, the one charged the longest ago is forgotten (and starts full again).
    let capacity: Int
    private let balances = Mutex<[String: (seconds: Double, at: Double)]>([:])

    init(share: Double = 0.25, burst: Double = 2, capacity: Int = 10_000) {
        self.share = max(.leastNormalMagnitude, share)
        self.burst = max(.leastNormalMagnitude, burst)
        self.capacity = max(1, capacity)
    }

    /// Whether `user` may have a query answered now; throws `Exceeded` when their balance has run out.
    func admit(_ user: String, now: Double) throws(Exceeded) {
        let balance = current(user, now: now)
        guard balance > 0 else { throw Exceeded(user: user, retryAfter: -balance / share + 0.1) }
    }

    /// Takes the time an answer to `user` took from their balance.
    func charge(_ user: String, seconds: Double, now: Double) {
        balances.withLock { balances in
            let balance = Self.filled(balances[user], share: share, burst: burst, now: now)
            if balances[user] == nil, balances.count >= capacity {
                // The one charged the longest ago goes first: it has asked the least lately.
                if let oldest = balances.min(by: { $0.value.at < $1.value.at })?.key { balances[oldest] = nil }
            }
            balances[user] = (balance - max(0, seconds), now)
        }
    }

    private func current(_ user: String, now: Double) -> Double {
        balances.withLock { Self.filled($0[user], share: share, burst: burst, now: now) }
    }

    private static func filled(_ entry: (seconds: Double, at: Double)?, share: Double, burst: Double, now: Double) -> Double {
        guard let entry else { return burst }
        return min(burst, entry.seconds + max(0, now - entry.at) * share)
    }
}
