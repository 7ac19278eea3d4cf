import Foundation
import IntentStore
import Synchronization
import Testing

@testable import IntentWorker

/// A tally of a large store took the recorder seconds, and a dashboard asks for one after every event it shows:
/// one open tab kept the recorder, which also writes the store, mostly counting. A slow tally is kept a short while.
@Suite struct SlowAnswersTests {
    final class Clock: Sendable {
        let now = Mutex(1_000.0)
        func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
        var time: Double { now.withLock { $0 } }
    }

    @Test func aSlowTallyIsKeptForAWhileAndAQuickOneIsCountedEveryTime() {
        let answers = StatusRecorder.SlowAnswers()
        let clock = Clock()
        let counts = Mutex(0)
        let operatorReader = StatusQuery.Reader(user: "ops", isOperator: true)
        func count(taking seconds: Double) -> StatusQuery.Answer {
            clock.advance(seconds)
            let number = counts.withLock { count in
                count += 1
                return count
            }
            return .tally([StatusQuery.Tally(type: "SendMessage", state: .success, count: number)])
        }
        let slow = { answers.answer(for: operatorReader, now: { clock.time }, count: { count(taking: 1.5) }) }
        let first = slow()
        #expect(slow() == first, "kept: not counted again")
        #expect(counts.withLock { $0 } == 1)
        clock.advance(StatusRecorder.SlowAnswers.keptFor)
        #expect(slow() != first, "counted again once the while is over")
        #expect(counts.withLock { $0 } == 2)

        let alice = StatusQuery.Reader(user: "alice", isOperator: false)
        for _ in 0..<3 { _ = answers.answer(for: alice, now: { clock.time }, count: { count(taking: 0.001) }) }
        #expect(counts.withLock { $0 } == 5, "a quick tally is counted every time")
    }
}
