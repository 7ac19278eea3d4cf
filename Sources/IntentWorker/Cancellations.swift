import Foundation
import Synchronization

/// The cancel hints read from the cancellation stream: for each id, the
/// broker-verified users who asked, and when. A hint counts only from the
/// intent's owner or an operator (the worker checks, knowing the owner), so a
/// producer cannot cancel another's intent by hinting; and only for a
/// submission made before it, so an id used again after a week-old cancel is
/// not canceled by it.
///
/// The worker reads the stream from its start whenever it connects, and writes
/// a marker of its own into it; until the marker comes back, the hints may be
/// missing older cancellations, so `isCanceled` waits for it (a few seconds at
/// most) rather than answer too early. At most `capacity` ids are kept, the
/// oldest forgotten first: a flood of hints costs bounded memory.
final class Cancellations: Sendable {
    private struct State {
        var senders: [String: [String: Double]] = [:]
        var order: [String] = []
        var head = 0
        var caughtUp = false
    }

    private let state = Mutex(State())
    private let capacity: Int
    /// The marker this process writes; a fresh one per process.
    let token = UUID().uuidString

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// A hint from `user` (nil: the message carried no verified user) to cancel
    /// `id`, sent at `at` (seconds since 1970).
    func add(_ id: String, from user: String?, at: Double) {
        state.withLock { state in
            if state.senders[id] == nil {
                state.order.append(id)
                if state.order.count - state.head > capacity {
                    state.senders[state.order[state.head]] = nil
                    state.head += 1
                    if state.head > capacity {
                        state.order.removeFirst(state.head)
                        state.head = 0
                    }
                }
            }
            state.senders[id, default: [:]][user ?? ""] = max(state.senders[id]?[user ?? ""] ?? 0, at)
        }
    }

    func markCaughtUp() {
        state.withLock { $0.caughtUp = true }
    }

    var isCaughtUp: Bool { state.withLock { $0.caughtUp } }

    /// Waits up to `wait` seconds for the stream to be read up to now, while `readable` and the task is not canceled.
    @inline(never)
    private func catchUp(wait: Double, readable: () -> Bool) async {
        let deadline = Date().addingTimeInterval(wait)
        var waited = false
        while !isCaughtUp, Date() < deadline, readable(), !Task.isCancelled {
            waited = true
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Waited once in vain (the stream is slow or unreadable): go on with what is known
        // rather than make every intent wait.
        if waited, readable() { markCaughtUp() }
    }

    /// Whether a hint to cancel `id`, sent after a submission at `submittedAt`
    /// (give or take a second of clocks apart), came from someone `counts`
    /// accepts (the owner, an operator); the empty string stands for a hint
    /// without a user. It waits only while `readable` (the broker is
    /// connected) and its task is not canceled (a handler past its time limit,
    /// whose sleeps would return at once): otherwise it answers from what was read so far.
    func isCanceled(
        _ id: String, submittedAt: Double, wait: Double = 5, readable: () -> Bool = { true }, by counts: (String) -> Bool
    ) async -> Bool {
        // Apart, so that a call finding the stream read (nearly every one) sets up none of the wait's clock values.
        if !isCaughtUp { await catchUp(wait: wait, readable: readable) }
        let senders = state.withLock { $0.senders[id] } ?? [:]
        return senders.contains { user, at in at >= submittedAt - 1 && counts(user) }
    }
}
