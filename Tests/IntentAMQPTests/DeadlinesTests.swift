import Foundation
import IntentKit
import Synchronization
import Testing

@testable import IntentAMQP

/// The deadline thread sleeps while nothing is scheduled, and an action scheduled then still runs: the wake-up
/// that ends its sleep is never lost, however the scheduling and the thread's going idle interleave. Every wait
/// here is for an event (an action running, the thread going to sleep); one that never comes fails the suite's
/// time limit.
@Suite(.timeLimit(.minutes(10)))
struct DeadlinesTests {
    /// A deadline thread of its own, and its going to sleep as a stream of events.
    static func deadlines() -> (Deadlines, AsyncStream<Void>) {
        let (wentIdle, idle) = AsyncStream<Void>.makeStream()
        return (Deadlines(wentIdle: { idle.yield() }), wentIdle)
    }

    /// Schedules an action and returns once it has run, with what it returned (on the deadline thread).
    static func run<T: Sendable>(on deadlines: Deadlines, after seconds: Double = 0, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in
            _ = deadlines.schedule(after: seconds) { done.resume(returning: body()) }
        }
    }

    @Test func anActionScheduledWhileTheThreadIsIdleRunsEveryTime() async {
        let (deadlines, wentIdle) = Self.deadlines()
        var idle = wentIdle.makeAsyncIterator()
        // Each round waits for the thread to go to sleep, then schedules the one action that must wake it. With
        // the thread already asleep, or on its way (the stream may hold a going idle it is past): both orders.
        for round in 0..<60 {
            if round.isMultiple(of: 2) { _ = await idle.next() }
            await Self.run(on: deadlines, after: round.isMultiple(of: 3) ? 0 : 0.001) {}
        }
        let (sleeps, signals) = deadlines.sleepsAndSignals
        #expect(sleeps > 0 && signals > 0, "the thread never slept between the rounds: \(sleeps) sleeps")
    }

    /// A deadline too far off to count in microseconds (a time limit of 10^13 s) once trapped on the overflow: it
    /// waits as long as the longest one, and an action after it still runs first.
    @Test func aDeadlineTooFarOffToCountWaitsAsTheLongestAndOthersStillRun() async {
        let (deadlines, _) = Self.deadlines()
        let ran = Mutex(false)
        let far = deadlines.schedule(after: 1e13) { ran.withLock { $0 = true } }
        let tasks = TaskDeadlines()
        let farTask = tasks.schedule(after: 1e300) { ran.withLock { $0 = true } }
        #expect(await Self.run(on: deadlines) { 1 } == 1, "the one due now ran")
        let farOnesRan = ran.withLock { $0 }
        #expect(!farOnesRan)
        deadlines.clear(far)
        tasks.clear(farTask)
    }

    @Test func aClearedActionNeverRunsAndTheNextOneDoes() async {
        let (deadlines, wentIdle) = Self.deadlines()
        let cleared = Atomic<Bool>(false)
        deadlines.clear(deadlines.schedule(after: 0.01) { cleared.store(true, ordering: .releasing) })
        // Due no sooner than the cleared one: once it has run, the cleared one would have run too.
        let sleptBefore = await Self.run(on: deadlines, after: 0.01) { deadlines.sleepsAndSignals.sleeps }
        // Then, with nothing left, the thread sleeps, and the next action wakes it.
        for await _ in wentIdle where deadlines.sleepsAndSignals.sleeps > sleptBefore { break }
        await Self.run(on: deadlines) {}
        let clearedRan = cleared.load(ordering: .acquiring)
        #expect(!clearedRan, "a cleared action ran")
    }

    /// A thread that was kept awake while actions were scheduled and cleared thousands of times (as a guard around
    /// every publish does) sleeps once none is left, instead of waking for signals left over from that time.
    @Test func aThreadThatRanThroughManySchedulesSleepsOnceNothingIsLeft() async {
        let (deadlines, wentIdle) = Self.deadlines()
        let anchorRan = Atomic<Bool>(false)
        // One action outlives the first churn, so the thread is awake (or woken) throughout it.
        let anchor = deadlines.schedule(after: 3_600) { anchorRan.store(true, ordering: .releasing) }
        for _ in 0..<2_000 {
            deadlines.clear(deadlines.schedule(after: 60) {})
        }
        deadlines.clear(anchor)
        for _ in 0..<2_000 {
            // Each of these comes while nothing else is scheduled: the case that signals.
            deadlines.clear(deadlines.schedule(after: 60) {})
        }
        // A last action; it notes, on the thread, how often the thread had slept before it ran.
        let sleptBefore = await Self.run(on: deadlines) { deadlines.sleepsAndSignals.sleeps }
        // With nothing left, the thread goes to sleep once more: then every sleep but this one was ended by exactly
        // one signal, and no signal waits to end this one early.
        for await _ in wentIdle where deadlines.sleepsAndSignals.sleeps > sleptBefore { break }
        let (sleeps, signals) = deadlines.sleepsAndSignals
        #expect(signals == sleeps - 1, "\(signals) signals for \(sleeps) sleeps")
        let ran = anchorRan.load(ordering: .acquiring)
        #expect(!ran, "a cleared action ran")
    }
}
