import Foundation
import Synchronization
import Testing

@testable import IntentAMQP

/// The wake-up pipe never loses a wake: a waiter that drains, looks at its
/// queue and waits again is always woken for work queued after it looked.
@Suite(.timeLimit(.minutes(10)))
struct WakeSignalTests {
    @Test func aWakeDuringADrainIsNotLost() async throws {
        let signal = WakeSignal()
        // A descriptor that never becomes readable: `wait` then returns true only when its time ran out.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        let idle = ends[0]
        let queued = Atomic<Int>(0)
        let rounds = 200_000
        let lost = Atomic<Int>(0)
        // The waiter and the waker each on a thread of its own; the test resumes when the waiter has taken every round.
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            let waiter = Thread {
                var taken = 0
                while taken < rounds {
                    signal.drain()
                    let available = queued.load(ordering: .acquiring)
                    if available > taken {
                        taken = available
                        continue
                    }
                    // Everything queued so far is taken; whatever comes next must wake this wait.
                    let timedOut = signal.wait(socket: idle, timeoutMilliseconds: 20_000)
                    if timedOut, queued.load(ordering: .acquiring) > taken { lost.add(1, ordering: .relaxed) }
                }
                finished.resume()
            }
            let waker = Thread {
                for _ in 0..<rounds {
                    queued.add(1, ordering: .releasing)
                    signal.wake()
                    // Now and then let the waiter catch up and sleep, so wakes meet drains at every point.
                    if Int.random(in: 0..<8) == 0 { sched_yield() }
                }
            }
            waiter.start()
            waker.start()
        }
        #expect(lost.load(ordering: .relaxed) == 0, "a wait slept through work queued before it")
    }

    /// A drain that runs between a `wake()`'s flag and its byte leaves the byte with the flag clear: the next wait
    /// ends at once on it, and the drain after that reads it, so the wait after that waits (unread, it would end
    /// every wait at once: a busy loop until the next wake).
    @Test func aByteLeftByAWakeAroundADrainIsReadAfterTheWaitItEnds() {
        let signal = WakeSignal()
        signal.wakeAroundADrain()
        #expect(signal.pipeHoldsData)
        signal.wait(socket: -1, timeoutMilliseconds: 60_000)
        signal.drain()
        #expect(!signal.pipeHoldsData, "the byte was read")
        // Wakes go on working, and a drain with nothing written reads nothing.
        signal.wake()
        #expect(signal.pipeHoldsData)
        signal.wait(socket: -1, timeoutMilliseconds: 60_000)
        signal.drain()
        #expect(!signal.pipeHoldsData)
        signal.drain()
        signal.wake()
        signal.wake()
        signal.drain()
        #expect(!signal.pipeHoldsData, "two wakes before a drain write one byte, which the drain reads")
    }

    @Test func aWaitInSecondsLastsAtLeastAsLongAsAskedUnlessWoken() {
        let signal = WakeSignal()
        // Waits shorter than poll's millisecond, and between two of them: rounded down, they would not wait at all.
        // Only a lower bound is checked, which load cannot break (it only makes a wait longer).
        for seconds in [0.000_3, 0.000_7, 0.001_2, 0.003] {
            for _ in 0..<10 {
                let start = ContinuousClock.now
                signal.wait(socket: -1, seconds: seconds)
                #expect(ContinuousClock.now - start >= .seconds(seconds), "a wait of \(seconds) s ended early")
            }
        }
        // On a descriptor that never becomes readable: a wake already sent ends an hour's wait, as a wake (false);
        // a wait of less than no time ends at once, as timed out (true).
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        signal.wake()
        #expect(!signal.wait(socket: ends[0], seconds: 3_600))
        signal.drain()
        #expect(signal.wait(socket: ends[0], seconds: -1))
    }
}
