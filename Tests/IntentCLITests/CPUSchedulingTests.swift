import Foundation
import Testing

@testable import IntentCLI

/// `--scheduling`: its values, and the policy it puts this process's threads under.
@Suite(.serialized) struct CPUSchedulingTests {
    @Test func theOptionTakesBatchOrNormalAndNothingElse() throws {
        #expect(try CPUScheduling(option: "batch") == .batch)
        #expect(try CPUScheduling(option: "normal") == .normal)
        for text in ["", "Batch", "idle", "fifo", "other"] {
            #expect(throws: UsageError.self) { try CPUScheduling(option: text) }
        }
        do {
            _ = try CPUScheduling(option: "idle")
        } catch {
            #expect(error.description == "--scheduling takes batch or normal, not 'idle'")
        }
    }

    @Test func aCommandLineWithoutTheOptionMeansBatch() throws {
        func parsed(_ words: [String]) throws -> CPUScheduling {
            try CPUScheduling(Arguments(words, flags: [], options: ["--scheduling"]))
        }
        #expect(try parsed([]) == .batch)
        #expect(try parsed(["--scheduling", "normal"]) == .normal)
        #expect(try parsed(["--scheduling", "batch"]) == .batch)
        #expect(throws: UsageError.self) { try parsed(["--scheduling", "fifo"]) }
    }

    /// A thread that was already running is changed, and one started afterwards inherits the policy; `normal` then
    /// puts every thread back.
    @Test func everyThreadRunningOrStartedLaterTakesThePolicy() throws {
        let earlier = ThreadProbe()
        defer { earlier.finish() }
        try CPUScheduling.batch.apply()
        #expect(CPUScheduling.current == .batch)
        #expect(earlier.policy() == CPUScheduling.batch.policy)
        let later = ThreadProbe()
        #expect(later.policy() == CPUScheduling.batch.policy)
        later.finish()
        try CPUScheduling.normal.apply()
        #expect(CPUScheduling.current == .normal)
        #expect(earlier.policy() == CPUScheduling.normal.policy)
    }
}

/// A thread that waits until it is asked for its own scheduling policy, then until it is told to end.
private final class ThreadProbe: @unchecked Sendable {
    // @unchecked: `asked` and `answer` are only touched under `condition`.
    private let condition = NSCondition()
    private var asked = false
    private var answer: Int32?
    private var done = false

    init() {
        let started = DispatchSemaphore(value: 0)
        Thread {
            started.signal()
            self.condition.lock()
            while !self.done {
                if self.asked {
                    self.answer = sched_getscheduler(0)
                    self.asked = false
                    self.condition.broadcast()
                }
                self.condition.wait()
            }
            self.condition.unlock()
        }.start()
        started.wait()
    }

    /// The policy the thread reads for itself.
    func policy() -> Int32? {
        condition.lock()
        defer { condition.unlock() }
        answer = nil
        asked = true
        condition.broadcast()
        while answer == nil { condition.wait() }
        return answer
    }

    func finish() {
        condition.lock()
        done = true
        condition.broadcast()
        condition.unlock()
    }
}
