import Foundation
import Synchronization

/// The ids of canceled intents, as read from the cancellation stream.
///
/// The worker reads the stream from its start whenever it connects, and writes
/// a marker of its own into it; until the marker comes back, the set may be
/// missing older cancellations, so `isCanceled` waits for it (a few seconds at
/// most) rather than answer too early.
final class Cancellations: Sendable {
    private struct State {
        var ids: Set<String> = []
        var caughtUp = false
    }

    private let state = Mutex(State())
    /// The marker this process writes; a fresh one per process.
    let token = UUID().uuidString

    func add(_ id: String) {
        _ = state.withLock { $0.ids.insert(id) }
    }

    func markCaughtUp() {
        state.withLock { $0.caughtUp = true }
    }

    var isCaughtUp: Bool { state.withLock { $0.caughtUp } }

    func isCanceled(_ id: String, wait: Double = 5) async -> Bool {
        let deadline = Date().addingTimeInterval(wait)
        while !isCaughtUp, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Waited once in vain (the stream is slow or unreadable): go on with what is known
        // rather than make every intent wait.
        markCaughtUp()
        return state.withLock { $0.ids.contains(id) }
    }
}
