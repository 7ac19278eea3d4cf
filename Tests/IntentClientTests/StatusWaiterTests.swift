import Foundation
import IntentKit
import IntentStore
import Testing

@testable import IntentClient

/// `--wait` reports only what the store holds (read-your-writes): never a
/// status made up ahead of the store.
@Suite struct StatusWaiterTests {
    static func status(_ state: IntentState, turn: Int = 0) -> IntentStatus {
        IntentStatus(id: "a", type: "SendMessage", state: state, updatedAt: 1, turn: turn)
    }

    @Test func aWaitReturnsTheFirstStoredStatusThatEndsIt() throws {
        var reads = [Self.status(.queued), Self.status(.inProgress), Self.status(.needsInput), Self.status(.success)]
        var served: [IntentStatus] = []
        let ended = try StatusWaiter.wait(
            id: "a", timeout: 10, brokerURL: nil, done: { $0.state.isTerminal },
            read: {
                let next = reads.isEmpty ? served.last : reads.removeFirst()
                if let next { served.append(next) }
                return next
            })
        #expect(ended == Self.status(.success))
        #expect(served.count == 4, "it read until the store showed the end, and no further")
    }

    @Test func aWaitThatTimesOutReportsTheLastStoredStatus() throws {
        let started = Date()
        let last = try StatusWaiter.wait(
            id: "a", timeout: 0.2, brokerURL: nil, done: { $0.state.isTerminal },
            read: {
                Self.status(.inProgress)
            })
        #expect(last == Self.status(.inProgress))
        #expect(Date().timeIntervalSince(started) >= 0.2, "it waited the whole time before giving up")
    }

    @Test func anIdTheStoreHasNotSeenIsNotYetAnAnswer() throws {
        var reads: [IntentStatus?] = [nil, nil, Self.status(.needsInput, turn: 1)]
        let answered = try StatusWaiter.wait(id: "a", timeout: 10, brokerURL: nil, done: StatusWaiter.answeredOrEnded) {
            reads.isEmpty ? nil : reads.removeFirst()
        }
        #expect(answered?.state == .needsInput && answered?.turn == 1)
    }
}

/// When a wait reads the store, told with the times given, not a clock.
@Suite struct ReadPacerTests {
    let start = Date(timeIntervalSince1970: 1_000)

    func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    @Test func theIntentsOwnEventIsReadAtOnceAndThenEagerlyAtGrowingIntervals() {
        var pacer = StatusWaiter.ReadPacer(now: at(0))
        let r1 = pacer.shouldRead(now: at(0.1), woken: true)
        #expect(r1)
        let r2 = pacer.shouldRead(now: at(0.1005), woken: false)
        #expect(!r2, "not before the first eager read is due (2 ms)")
        let r3 = pacer.shouldRead(now: at(0.102), woken: false)
        #expect(r3)
        let r4 = pacer.shouldRead(now: at(0.104), woken: false)
        #expect(!r4, "the next one 3 ms later")
        let r5 = pacer.shouldRead(now: at(0.105), woken: false)
        #expect(r5)
    }

    /// Another intent's event of the same owner woke the wait: under a load of them, a read per event would be a
    /// question to the recorder per event.
    @Test func otherEventsOfTheOwnerDoNotMakeAWaitReadBeforeItsTime() {
        var pacer = StatusWaiter.ReadPacer(now: at(0))
        let r6 = pacer.shouldRead(now: at(1), woken: true)
        #expect(r6)
        // A thousand other events within the next millisecond and a half: none is read for.
        var reads = 0
        for index in 0..<1_000 where pacer.shouldRead(now: at(1 + Double(index) * 0.0000015), woken: false) { reads += 1 }
        #expect(reads == 0)
        // Out of the eager period, the store is read every half second, whatever comes meanwhile.
        var idle = StatusWaiter.ReadPacer(now: at(10))
        let r7 = idle.shouldRead(now: at(10.2), woken: false)
        #expect(!r7)
        let r8 = idle.shouldRead(now: at(10.4), woken: false)
        #expect(!r8)
        let r9 = idle.shouldRead(now: at(10.5), woken: false)
        #expect(r9)
        let r10 = idle.shouldRead(now: at(10.6), woken: false)
        #expect(!r10)
        #expect(abs(idle.wait(now: at(10.6)) - 0.4) < 1e-6)
    }

    @Test func eagerReadsSlowToTheirLongestAndEndAfterTheEagerPeriod() {
        var pacer = StatusWaiter.ReadPacer(now: at(0))
        let r11 = pacer.shouldRead(now: at(0), woken: true)
        #expect(r11)
        var now = at(0)
        var gaps: [Double] = []
        var last = now
        while now < at(StatusWaiter.eagerReading + 1) {
            now = now.addingTimeInterval(0.001)
            if pacer.shouldRead(now: now, woken: false) {
                gaps.append(now.timeIntervalSince(last))
                last = now
            }
        }
        #expect(gaps.allSatisfy { $0 <= 0.5 + 0.001 })
        #expect(gaps.contains { abs($0 - StatusWaiter.slowestEagerRead) <= 0.002 }, "eager reads reach their slowest")
        #expect(gaps.last.map { $0 >= 0.5 } == true, "then every half second")
    }
}
