import Foundation
import Synchronization
import Testing

@testable import IntentAMQP

/// The deadline thread sleeps while nothing is scheduled, and an action scheduled then still runs: the wake-up
/// that ends its sleep is never lost, however the scheduling and the thread's going idle interleave.
@Suite(.timeLimit(.minutes(10)))
struct DeadlinesTests {
    /// Waits for `ran` to be set, up to a minute (a busy machine may hold the thread up, never that long).
    static func waitUntil(_ ran: borrowing Atomic<Bool>) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !ran.load(ordering: .acquiring) {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return true
    }

    @Test func anActionScheduledWhileTheThreadIsIdleRunsEveryTime() async {
        // Each round's action is the only one scheduled, and it runs before the next is: the thread goes idle in
        // between (or is on its way to), which is when a wake-up could be lost.
        for round in 0..<60 {
            let ran = Atomic<Bool>(false)
            _ = Deadlines.shared.schedule(after: round.isMultiple(of: 2) ? 0 : 0.001) { ran.store(true, ordering: .releasing) }
            let done = await Self.waitUntil(ran)
            #expect(done, "round \(round): the action never ran")
        }
    }

    @Test func aClearedActionNeverRunsAndTheNextOneDoes() async throws {
        let cleared = Atomic<Bool>(false)
        let token = Deadlines.shared.schedule(after: 0.01) { cleared.store(true, ordering: .releasing) }
        Deadlines.shared.clear(token)
        // The next action, scheduled after the cleared one left the thread with nothing to run, still runs;
        // and by then the cleared one's deadline is long past.
        try await Task.sleep(for: .milliseconds(100))
        let next = Atomic<Bool>(false)
        _ = Deadlines.shared.schedule(after: 0) { next.store(true, ordering: .releasing) }
        let done = await Self.waitUntil(next)
        let clearedRan = cleared.load(ordering: .acquiring)
        #expect(done)
        #expect(!clearedRan)
    }
}

extension DeadlinesTests {
    /// A thread that was kept awake while actions were scheduled and cleared thousands of times (as a guard around
    /// every publish does) sleeps once none is left, instead of waking for signals left over from that time.
    @Test func aThreadThatRanThroughManySchedulesSleepsOnceNothingIsLeft() async throws {
        let deadlines = Deadlines()
        let keepAwake = Atomic<Bool>(false)
        // One action outlives the churn, so the thread is awake (or woken) throughout it.
        let anchor = deadlines.schedule(after: 3_600) { keepAwake.store(true, ordering: .releasing) }
        for _ in 0..<2_000 {
            deadlines.clear(deadlines.schedule(after: 60) {})
        }
        deadlines.clear(anchor)
        for _ in 0..<2_000 {
            // Each of these comes while nothing else is scheduled: the case that signals.
            deadlines.clear(deadlines.schedule(after: 60) {})
        }
        // Asleep for want of work: wait for it (a busy machine may take a while to get there), then look again later.
        let deadline = ContinuousClock.now + .seconds(60)
        while !deadlines.isAsleep, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(deadlines.isAsleep)
        let before = deadlines.rounds.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(300))
        let after = deadlines.rounds.load(ordering: .relaxed)
        #expect(after == before, "the idle thread woke \(after - before) times with nothing scheduled")
        let anchorRan = keepAwake.load(ordering: .acquiring)
        #expect(!anchorRan, "a cleared action ran")
    }
}
