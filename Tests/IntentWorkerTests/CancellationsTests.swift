import Foundation
import Synchronization
import Testing

@testable import IntentWorker

/// What a worker knows of cancel hints: how long a question about one waits for the stream to catch up.
@Suite(.timeLimit(.minutes(2)))
struct CancellationsTests {
    /// Counts how often the wait asks whether the broker is readable: once a round of waiting.
    final class Rounds: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        func readable() -> Bool {
            count.add(1, ordering: .relaxed)
            return true
        }
    }

    @Test func aCanceledTaskAsksWithoutWaitingForTheStream() async throws {
        let cancellations = Cancellations()
        cancellations.add("late", from: "alice", at: 100)
        let rounds = Rounds()
        // A handler past its time limit, asking: its task is canceled, so a sleep would return at once, round after round.
        let asking = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await cancellations.isCanceled("late", submittedAt: 100, wait: 5, readable: rounds.readable, by: { _ in true })
        }
        #expect(await asking.value, "it answers from what was read so far")
        #expect(rounds.value == 1, "no rounds of waiting, which in a canceled task would spin: \(rounds.value)")
        #expect(!cancellations.isCaughtUp, "not marked caught up: it never waited")
    }

    @Test func anUncanceledTaskWaitsForTheStreamWhileTheBrokerIsReadable() async throws {
        let cancellations = Cancellations()
        let rounds = Rounds()
        let asking = Task { await cancellations.isCanceled("x", submittedAt: 100, wait: 60, readable: rounds.readable, by: { _ in true }) }
        while rounds.value < 3 { await Task.yield() }
        cancellations.markCaughtUp()
        #expect(await asking.value == false)
        #expect(rounds.value >= 3)
    }
}
