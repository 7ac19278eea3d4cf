import Foundation
import Synchronization

/// Says something at most once per `interval`, counting what it kept quiet:
/// a full disk under a thousand waiting intents is a line every few seconds,
/// not a thousand.
final class RateLimitedNotice: Sendable {
    private let interval: Double
    private let state = Mutex<(last: Date, suppressed: Int)>((.distantPast, 0))

    init(interval: Double) {
        self.interval = interval
    }

    /// Calls `say` with how many notes were suppressed since the last one, or counts this one.
    func note(_ say: (Int) -> Void) {
        let suppressed = state.withLock { state -> Int? in
            let now = Date()
            guard now.timeIntervalSince(state.last) >= interval else {
                state.suppressed += 1
                return nil
            }
            defer { state = (now, 0) }
            return state.suppressed
        }
        if let suppressed { say(suppressed) }
    }
}
